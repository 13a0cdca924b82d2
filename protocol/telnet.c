/* telnet.c - telnet option handling over raw input, key decoding for character mode, 0xFF
 * escaping. */
#include "telnet.h"

#include <string.h>

/* Telnet command bytes (RFC 854) and the options we deal with. */
enum {
    IAC = 255,
    DONT = 254,
    DO = 253,
    WONT = 252,
    WILL = 251,
    SB = 250,
    IP = 244,
    SE = 240,
    CMD_MIN = 236, /* EOF (RFC 1184); below it "IAC x" is no command */
    OPT_ECHO = 1,
    OPT_SGA = 3,
    OPT_TM = 6,
    OPT_NAWS = 31,
};

/* Parser states. */
enum { S_DATA, S_IAC, S_OPT, S_SB_OPT, S_SB, S_SB_IAC };

/* RFC 1143 option states; the "opposite" queue bits are not needed because
 * we never change our mind about an option once offered. */
enum { Q_NO, Q_WANTYES, Q_YES };

void proto_telnet_init(proto_telnet *t) {
    memset(t, 0, sizeof *t);
}

bool proto_telnet_midway(const proto_telnet *t) {
    return t->state != S_DATA;
}

void proto_telnet_offered(proto_telnet *t) {
    if (t->us_echo == Q_NO) t->us_echo = Q_WANTYES;
    if (t->us_sga == Q_NO) t->us_sga = Q_WANTYES;
    if (t->him_naws == Q_NO) t->him_naws = Q_WANTYES;
}

const unsigned char *proto_telnet_replies(proto_telnet *t, size_t *len) {
    *len = t->reply_len;
    t->reply_len = 0;
    return t->reply;
}

/* The caller made sure three bytes fit. */
static void reply(proto_telnet *t, uint8_t verb, uint8_t opt) {
    t->reply[t->reply_len++] = IAC;
    t->reply[t->reply_len++] = verb;
    t->reply[t->reply_len++] = opt;
}

static bool bit_test(const uint8_t *set, uint8_t opt) {
    return set[opt >> 3] & (1u << (opt & 7));
}
static void bit_set(uint8_t *set, uint8_t opt) {
    set[opt >> 3] |= (uint8_t)(1u << (opt & 7));
}

/* Refuses an option we do not support, once per option and direction. */
static void refuse(proto_telnet *t, uint8_t *set, uint8_t verb, uint8_t opt) {
    if (bit_test(set, opt)) return;
    bit_set(set, opt);
    reply(t, verb, opt);
}

/* The client asks us to enable (DO) or disable (DONT) one of our options
 * that we support. Returns true if the state changed. */
static bool our_option(proto_telnet *t, uint8_t *q, bool enable, uint8_t opt) {
    if (enable) {
        if (*q == Q_YES) return false;
        /* WANTYES: this is the answer to our offer, no reply. NO: the client
         * asks first, and we agree. */
        if (*q == Q_NO) reply(t, WILL, opt);
        *q = Q_YES;
        return true;
    }
    if (*q == Q_NO) return false;
    /* YES: the client turns it off, RFC 1143 wants our WONT. WANTYES: it
     * refused our offer, nothing to say. */
    if (*q == Q_YES) reply(t, WONT, opt);
    *q = Q_NO;
    return true;
}

/* The client offers (WILL) or withdraws (WONT) one of its options that we
 * accept. Returns true if the state changed. */
static bool his_option(proto_telnet *t, uint8_t *q, bool enable, uint8_t opt) {
    if (enable) {
        if (*q == Q_YES) return false;
        if (*q == Q_NO) reply(t, DO, opt);
        *q = Q_YES;
        return true;
    }
    if (*q == Q_NO) return false;
    if (*q == Q_YES) reply(t, DONT, opt);
    *q = Q_NO;
    return true;
}

/* Handles IAC verb opt; the caller made sure a reply fits. Returns events. */
static unsigned negotiate(proto_telnet *t, uint8_t verb, uint8_t opt) {
    unsigned ev = 0;
    switch (verb) {
    case DO:
    case DONT: {
        bool on = verb == DO;
        if (opt == OPT_ECHO) {
            our_option(t, &t->us_echo, on, opt);
            bool echo = t->us_echo == Q_YES;
            if (echo != t->echo) ev |= PROTO_TN_EV_ECHO;
            t->echo = echo;
        } else if (opt == OPT_SGA) {
            our_option(t, &t->us_sga, on, opt);
        } else if (opt == OPT_TM && on) {
            /* Every DO TIMING-MARK is answered: telnet discards output
             * until it sees the answer (after Ctrl-C in line mode). */
            reply(t, WONT, opt);
        } else if (on) {
            refuse(t, t->refused_do, WONT, opt);
        }
        break;
    }
    case WILL:
    case WONT: {
        bool on = verb == WILL;
        if (opt == OPT_NAWS)
            his_option(t, &t->him_naws, on, opt);
        else if (opt == OPT_SGA)
            his_option(t, &t->him_sga, on, opt);
        else if (on)
            refuse(t, t->refused_will, DONT, opt);
        break;
    }
    }
    return ev;
}

/* A subnegotiation ended with IAC SE. Returns events. */
static unsigned subnegotiation(proto_telnet *t) {
    if (t->sb_opt != OPT_NAWS || t->sb_overflow || t->sb_len != 4) return 0;
    t->width = (uint16_t)(t->sb[0] << 8 | t->sb[1]);
    t->height = (uint16_t)(t->sb[2] << 8 | t->sb[3]);
    return PROTO_TN_EV_RESIZE;
}

/* A complete telnet command was seen; the first one tells the caller. */
static unsigned command_seen(proto_telnet *t) {
    if (t->seen) return 0;
    t->seen = true;
    return PROTO_TN_EV_TELNET;
}

size_t proto_telnet_feed(proto_telnet *t, const unsigned char *in, size_t n,
                         unsigned char *out, size_t *out_len, unsigned *events) {
    size_t o = 0;
    unsigned ev = 0;
    size_t i;
    /* An interrupt does not stop the call (see telnet.h). */
    for (i = 0; i < n && (ev & ~(unsigned)PROTO_TN_EV_INTERRUPT) == 0; i++) {
        uint8_t c = in[i];
        switch (t->state) {
        case S_DATA:
            if (c == IAC)
                t->state = S_IAC;
            else
                out[o++] = c;
            break;
        case S_SB_IAC:
            if (c == SE) {
                t->state = S_DATA;
                ev |= subnegotiation(t) | command_seen(t);
                break;
            }
            if (c == IAC) {
                t->state = S_SB;
                goto sb_byte;
            }
            /* IAC x inside a subnegotiation: a broken client. Drop the
             * subnegotiation and read x as the command it announces. */
            t->state = S_IAC;
            /* fall through */
        case S_IAC:
            if (c == IAC) {
                t->state = S_DATA; /* IAC IAC: one 0xFF data byte */
                out[o++] = c;
            } else if (c == WILL || c == WONT || c == DO || c == DONT) {
                t->verb = c;
                t->state = S_OPT;
            } else if (c == SB) {
                t->state = S_SB_OPT;
            } else {
                t->state = S_DATA;
                if (c >= CMD_MIN) ev |= command_seen(t);
                if (c == IP) ev |= PROTO_TN_EV_INTERRUPT;
            }
            break;
        case S_OPT:
            if (t->reply_len + 3 > sizeof t->reply)
                goto stop; /* the caller must take the replies first */
            t->state = S_DATA;
            ev |= negotiate(t, t->verb, c) | command_seen(t);
            break;
        case S_SB_OPT:
            t->sb_opt = c;
            t->sb_len = 0;
            t->sb_overflow = false;
            t->state = S_SB;
            break;
        case S_SB:
            if (c == IAC) {
                t->state = S_SB_IAC;
                break;
            }
        sb_byte:
            if (t->sb_len < sizeof t->sb)
                t->sb[t->sb_len++] = c;
            else
                t->sb_overflow = true;
            break;
        }
    }
stop:
    *out_len = o;
    *events = ev;
    return i;
}

size_t proto_telnet_escaped_len(const void *data, size_t n) {
    const unsigned char *p = data;
    size_t len = n;
    for (size_t i = 0; i < n; i++)
        len += p[i] == IAC;
    return len;
}

size_t proto_telnet_escape(const void *data, size_t n, unsigned char *out) {
    const unsigned char *p = data;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        out[o++] = p[i];
        if (p[i] == IAC) out[o++] = IAC;
    }
    return o;
}

/* ------------------------------------------------------------------ keys --- */

enum { K_GROUND, K_ESC, K_CSI, K_SS3 };

#define CSI_MAX 16 /* parameter bytes we sit through before giving up */

void proto_keys_init(proto_keys *k) {
    memset(k, 0, sizeof *k);
}

bool proto_keys_pending(const proto_keys *k) {
    return k->state == K_ESC;
}

bool proto_keys_flush(proto_keys *k, proto_key *out) {
    bool lone = k->state == K_ESC;
    k->state = K_GROUND;
    if (lone) *out = (proto_key){.type = PROTO_KEY_ESCAPE};
    return lone;
}

/* The final byte of ESC [ ... or ESC O: an arrow key, or nothing. */
static int arrow(uint8_t c, proto_key *out) {
    static const eng_dir dirs[4] = {ENG_UP, ENG_DOWN, ENG_RIGHT, ENG_LEFT};
    if (c < 'A' || c > 'D') return 0;
    *out = (proto_key){.type = PROTO_KEY_MOVE, .dir = dirs[c - 'A']};
    return 1;
}

/* A byte outside any escape sequence. */
static int ground(proto_keys *k, uint8_t c, proto_key *out) {
    bool after_cr = k->last_cr;
    k->last_cr = c == '\r';
    switch (c) {
    case '\r':
        *out = (proto_key){.type = PROTO_KEY_ENTER};
        return 1;
    case '\n':
        if (after_cr) return 0;
        *out = (proto_key){.type = PROTO_KEY_ENTER};
        return 1;
    case 0x7f:
    case 0x08:
        *out = (proto_key){.type = PROTO_KEY_BACKSPACE};
        return 1;
    case 0x03:
        *out = (proto_key){.type = PROTO_KEY_CTRL_C};
        return 1;
    case 0x04:
        *out = (proto_key){.type = PROTO_KEY_CTRL_D};
        return 1;
    case 0x15:
        *out = (proto_key){.type = PROTO_KEY_KILL_LINE};
        return 1;
    case 0x1b:
        k->state = K_ESC;
        return 0;
    case ':':
        *out = (proto_key){.type = PROTO_KEY_COLON, .ch = ':'};
        return 1;
    }
    if (c >= 0x80) {
        /* A byte of a non-ASCII character (UTF-8 or not): text, so that a
         * command line holds what was typed and refuses it as netcat's would,
         * rather than losing it silently ("name caf\xc3\xa9" is no "name caf"). */
        *out = (proto_key){.type = PROTO_KEY_CHAR, .ch = (char)c};
        return 1;
    }
    if (c < 0x20) return 0; /* NUL (also the tail of "\r\0") and other controls */
    eng_dir dir;
    switch (c | 0x20) {
    case 'w':
    case 'k':
        dir = ENG_UP;
        break;
    case 's':
    case 'j':
        dir = ENG_DOWN;
        break;
    case 'a':
    case 'h':
        dir = ENG_LEFT;
        break;
    case 'd':
    case 'l':
        dir = ENG_RIGHT;
        break;
    default:
        *out = (proto_key){.type = PROTO_KEY_CHAR, .ch = (char)c};
        return 1;
    }
    *out = (proto_key){.type = PROTO_KEY_MOVE, .dir = dir, .ch = (char)c};
    return 1;
}

int proto_keys_feed(proto_keys *k, unsigned char c, proto_key out[2]) {
    switch (k->state) {
    case K_ESC:
        if (c == '[') {
            k->state = K_CSI;
            k->csi_len = 0;
            return 0;
        }
        if (c == 'O') {
            k->state = K_SS3;
            return 0;
        }
        k->state = K_GROUND;
        out[0] = (proto_key){.type = PROTO_KEY_ESCAPE};
        return 1 + ground(k, c, &out[1]);
    case K_CSI:
        if (c >= 0x20 && c <= 0x3f) { /* parameters and intermediates */
            if (++k->csi_len > CSI_MAX) k->state = K_GROUND;
            return 0;
        }
        k->state = K_GROUND;
        if (c >= 0x40 && c <= 0x7e)
            return arrow((uint8_t)c, out); /* also ESC [ 1 ; 5 A: still up */
        return ground(k, c, out);          /* a control byte cuts it short */
    case K_SS3:
        k->state = K_GROUND;
        if (c >= 0x20 && c <= 0x7e) return arrow((uint8_t)c, out);
        return ground(k, c, out);
    }
    return ground(k, c, out);
}
