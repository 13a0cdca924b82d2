/* telnet.h - telnet option handling over raw input, key decoding for character mode, 0xFF
 * escaping. */
#ifndef RACE2048_TELNET_H
#define RACE2048_TELNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* ---------------------------------------------------------------- probe --- */

/* The offer a server sends to a human: IAC WILL ECHO, IAC WILL SGA, IAC DO
 * NAWS. A telnet client answers it by switching to character mode. */
#define PROTO_TELNET_OFFER     "\xff\xfb\x01\xff\xfb\x03\xff\xfd\x1f"
#define PROTO_TELNET_OFFER_LEN 9

/* The same offer wrapped in a DCS string (ESC P ... ESC \), for connections
 * whose kind is not known yet: terminals behind netcat ignore it, telnet
 * still answers it. */
#define PROTO_TELNET_OFFER_DCS     "\x1b\x50" PROTO_TELNET_OFFER "\x1b\x5c"
#define PROTO_TELNET_OFFER_DCS_LEN 13

/* ------------------------------------------------------ option handling --- */

#define PROTO_TELNET_REPLY_MAX 48 /* reply bytes held between two takes */
#define PROTO_TELNET_SB_MAX    32 /* longest subnegotiation kept; longer: ignored */

/* Events a feed reports, as bits. */
enum {
    PROTO_TN_EV_TELNET = 1 << 0, /* the first telnet command: this is a telnet client */
    PROTO_TN_EV_ECHO = 1 << 1,   /* t->echo changed: start or stop echoing input */
    PROTO_TN_EV_RESIZE = 1 << 2, /* a window size (NAWS) arrived: t->width, t->height */
    PROTO_TN_EV_INTERRUPT = 1 << 3, /* IAC IP: the user pressed Ctrl-C in line mode */
};
/* Telnet follows IAC IP with IAC DO TIMING-MARK and discards all output
 * until the answer comes, so PROTO_TN_EV_INTERRUPT does not stop a feed:
 * the call goes on to collect that answer in the same read. Send the
 * replies before any output written in response to the interrupt. */

/* One connection's telnet state. Read the public fields freely; change them
 * only through the functions. Everything is inside the struct: no malloc. */
typedef struct proto_telnet {
    /* Parser (internal). */
    uint8_t state;                   /* where in an IAC sequence the input is */
    uint8_t verb;                    /* the WILL/WONT/DO/DONT being read */
    uint8_t sb_opt;                  /* option of the subnegotiation being read */
    uint8_t sb_len;                  /* bytes in sb */
    bool sb_overflow;                /* the subnegotiation was longer than sb */
    uint8_t sb[PROTO_TELNET_SB_MAX]; /* subnegotiation bytes, IAC IAC undoubled */
    /* Options, RFC 1143 states (internal): ours for ECHO and SGA, the
     * client's for NAWS and SGA; and which options were refused already,
     * so that a client repeating a request never gets a second refusal. */
    uint8_t us_echo, us_sga, him_naws, him_sga;
    uint8_t refused_do[32];   /* bit set: we sent WONT for this option */
    uint8_t refused_will[32]; /* bit set: we sent DONT for this option */
    /* What the server acts on. */
    bool seen;       /* any telnet command arrived: the client is a telnet */
    bool echo;       /* the client said DO ECHO (and not DONT since): echo input */
    uint16_t width;  /* window size from NAWS, 0 until one arrives */
    uint16_t height; /* likewise */
    /* Bytes the server must send to the client, taken with
     * proto_telnet_replies(). */
    unsigned char reply[PROTO_TELNET_REPLY_MAX];
    size_t reply_len;
} proto_telnet;

/* Starts a connection's telnet state: nothing offered, nothing seen.
 * Cannot fail. */
void proto_telnet_init(proto_telnet *t);

/* True while a telnet command or subnegotiation has begun and not ended
 * (an unfinished request, for the server's request timeout). */
bool proto_telnet_midway(const proto_telnet *t);

/* Records that the server has sent PROTO_TELNET_OFFER (plain or DCS): the
 * client's DO ECHO, DO SGA and WILL NAWS are then answers, acknowledged by
 * state without a reply. Call it once when the offer is queued. */
void proto_telnet_offered(proto_telnet *t);

/* Runs n raw input bytes through the IAC state machine (sequences may be
 * split anywhere across calls). Data bytes go to out (which must hold n
 * bytes; out may be the same buffer as in), their count to *out_len; the
 * events of this call to *events (PROTO_TN_EV_ bits, 0 if none); replies
 * the server must send accumulate in t->reply.
 *
 * Returns how many bytes were consumed. The call stops early right after a
 * command that raised events (but PROTO_TN_EV_INTERRUPT, see above), so data
 * before and after an event are not mixed up, and before a command whose
 * reply would not fit in t->reply.
 * The caller handles the data, sends proto_telnet_replies(), handles the
 * events, and calls again with the rest; after the replies were taken, a
 * call with n > 0 always consumes at least one byte. Cannot fail. */
size_t proto_telnet_feed(proto_telnet *t, const unsigned char *in, size_t n,
                         unsigned char *out, size_t *out_len, unsigned *events);

/* Takes the pending reply bytes: returns them (valid until the next call on
 * t) and their count in *len, and empties the reply buffer. *len is 0 when
 * there is nothing to send. */
const unsigned char *proto_telnet_replies(proto_telnet *t, size_t *len);

/* ------------------------------------------------------- output escape --- */

/* How many bytes data takes once every 0xFF is doubled. */
size_t proto_telnet_escaped_len(const void *data, size_t n);

/* Copies n bytes to out doubling every 0xFF (a data byte 0xFF is IAC IAC on
 * a telnet connection). out must hold proto_telnet_escaped_len(data, n)
 * bytes (2 * n always suffices) and must not overlap data. Returns the
 * number of bytes written. */
size_t proto_telnet_escape(const void *data, size_t n, unsigned char *out);

/* --------------------------------------------------------- key decoding --- */

/* A key typed in character mode. */
typedef enum proto_key_type {
    PROTO_KEY_MOVE,      /* w/a/s/d, h/j/k/l (any case) or an arrow key; dir says which */
    PROTO_KEY_ENTER,     /* "\r\0", "\r\n", "\r" or "\n" */
    PROTO_KEY_BACKSPACE, /* 0x7f or 0x08 */
    PROTO_KEY_CTRL_C,    /* 0x03 */
    PROTO_KEY_CTRL_D,    /* 0x04 */
    PROTO_KEY_KILL_LINE, /* Ctrl-U (0x15): clears the command line */
    PROTO_KEY_COLON,     /* ':' opens the command line */
    PROTO_KEY_ESCAPE,    /* Esc on its own */
    PROTO_KEY_CHAR,      /* any other printable ASCII byte, or a byte >= 0x80, in ch */
} proto_key_type;

typedef struct proto_key {
    proto_key_type type;
    eng_dir dir; /* PROTO_KEY_MOVE only */
    /* The byte typed, for every key that is one printable byte (a move
     * letter, ':', a CHAR): a command line uses it whatever the type. 0 for
     * the other keys, arrows included. */
    char ch;
} proto_key;

/* Key decoder state: a separate small machine over the data bytes that
 * proto_telnet_feed() outputs, so escape sequences may be split too. */
typedef struct proto_keys {
    uint8_t state;   /* ground, after Esc, inside ESC [ ..., after ESC O */
    uint8_t csi_len; /* parameter bytes seen in ESC [ ...; bounded */
    bool last_cr;    /* the previous byte was '\r': a '\n' or '\0' now is its tail */
} proto_keys;

/* Starts a decoder with nothing pending. Cannot fail. */
void proto_keys_init(proto_keys *k);

/* Decodes one data byte. Returns how many keys it completed (0, 1 or 2)
 * and writes them to out[0..]. It is 2 when a pending Esc turns out to be
 * alone (the byte is neither '[' nor 'O'): PROTO_KEY_ESCAPE, then the key
 * the byte itself makes. Unknown escape sequences and other control bytes
 * give nothing. Cannot fail. */
int proto_keys_feed(proto_keys *k, unsigned char c, proto_key out[2]);

/* True while an Esc waits for the byte that says whether it starts an
 * arrow key. An Esc alone arrives by itself at the end of a read: the
 * caller flushes it when no byte follows soon (e.g. on a short timer). */
bool proto_keys_pending(const proto_keys *k);

/* Ends any pending sequence: a lone pending Esc becomes PROTO_KEY_ESCAPE in
 * *out (returns true); an unfinished ESC [ ... or ESC O is dropped (returns
 * false). */
bool proto_keys_flush(proto_keys *k, proto_key *out);

#endif
