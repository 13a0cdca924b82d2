/* fuzz_telnet.c - libFuzzer target: telnet parsing and key decoding, fed in input-chosen
 * chunks, cut-independent. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "telnet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fails loudly so that libFuzzer records the input. */
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) abort();                                                            \
    } while (0)

/* Everything a run produced, folded into hashes so runs compare cheaply. */
typedef struct result {
    uint64_t data, events, replies, keys;
    size_t data_len, replies_len, interrupts;
    proto_telnet t;
} result;

static void mix(uint64_t *h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ b[i]) * 1099511628211u;
}

static void note_key(result *r, const proto_key *k) {
    CHECK(k->type >= PROTO_KEY_MOVE && k->type <= PROTO_KEY_CHAR);
    if (k->type == PROTO_KEY_MOVE) CHECK(k->dir >= ENG_LEFT && k->dir <= ENG_DOWN);
    /* Printable ASCII, or (text only) a byte of a non-ASCII character. */
    unsigned char ch = (unsigned char)k->ch;
    if (k->type == PROTO_KEY_COLON) CHECK(ch == ':');
    if (k->type == PROTO_KEY_CHAR) CHECK((ch >= 0x20 && ch <= 0x7e) || ch >= 0x80);
    int v[3] = {(int)k->type, k->type == PROTO_KEY_MOVE ? (int)k->dir : 0, k->ch};
    mix(&r->keys, v, sizeof v);
}

/* Streams data through a telnet parser and a key decoder the way a server
 * does, in chunks whose sizes the input picks (each chunk's first byte:
 * 1..16 bytes), or in one piece. */
static void run(result *r, const uint8_t *data, size_t size, bool offered, bool chunked) {
    memset(r, 0, sizeof *r);
    r->data = r->events = r->replies = r->keys = 14695981039346656037u;
    proto_telnet_init(&r->t);
    if (offered) proto_telnet_offered(&r->t);
    proto_keys keys;
    proto_keys_init(&keys);
    static unsigned char out[1 << 20];
    size_t pos = 0;
    while (pos < size) {
        size_t chunk = chunked ? 1 + data[pos] % 16 : size - pos;
        if (chunk > size - pos) chunk = size - pos;
        size_t done = 0;
        while (done < chunk) {
            size_t out_len, rlen;
            unsigned ev;
            size_t used = proto_telnet_feed(&r->t, data + pos + done, chunk - done, out,
                                            &out_len, &ev);
            CHECK(used > 0 && used <= chunk - done);
            CHECK(out_len <= used);
            CHECK(r->t.reply_len <= PROTO_TELNET_REPLY_MAX);
            CHECK(r->t.sb_len <= PROTO_TELNET_SB_MAX);
            CHECK((ev & ~0xfu) == 0);
            mix(&r->data, out, out_len);
            r->data_len += out_len;
            for (size_t i = 0; i < out_len; i++) {
                proto_key k[2];
                int nk = proto_keys_feed(&keys, out[i], k);
                CHECK(nk >= 0 && nk <= 2);
                for (int j = 0; j < nk; j++)
                    note_key(r, &k[j]);
            }
            const unsigned char *rep = proto_telnet_replies(&r->t, &rlen);
            CHECK(r->t.reply_len == 0);
            CHECK(rlen % 3 == 0); /* every reply is IAC verb option */
            for (size_t i = 0; i < rlen; i += 3)
                CHECK(rep[i] == 0xff && rep[i + 1] >= 251);
            mix(&r->replies, rep, rlen);
            r->replies_len += rlen;
            if (ev & PROTO_TN_EV_INTERRUPT)
                r->interrupts++; /* no stop, so no position; several in one call are one
                                    bit */
            if (ev & ~(unsigned)PROTO_TN_EV_INTERRUPT) {
                /* Where an event falls in the data does not depend on cuts. */
                uint64_t e[5] = {ev & ~(unsigned)PROTO_TN_EV_INTERRUPT, r->data_len,
                                 r->t.echo, r->t.width, r->t.height};
                mix(&r->events, e, sizeof e);
            }
            if (ev & PROTO_TN_EV_TELNET) CHECK(r->t.seen);
            done += used;
        }
        pos += chunk;
    }
    proto_key k;
    if (proto_keys_flush(&keys, &k)) {
        CHECK(k.type == PROTO_KEY_ESCAPE);
        note_key(r, &k);
    }
    CHECK(!proto_keys_pending(&keys));
}

static bool same(const result *a, const result *b) {
    return a->data == b->data && a->events == b->events && a->replies == b->replies &&
           a->keys == b->keys && a->data_len == b->data_len &&
           a->replies_len == b->replies_len &&
           (a->interrupts > 0) == (b->interrupts > 0) && a->t.seen == b->t.seen &&
           a->t.echo == b->t.echo && a->t.width == b->t.width &&
           a->t.height == b->t.height;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1 << 16)) return 0;
    static result whole, cut;
    for (int offered = 0; offered <= 1; offered++) {
        run(&whole, data, size, offered, false);
        run(&cut, data, size, offered, true);
        CHECK(same(&whole, &cut));
        if (!memchr(data, 0xff, size)) {
            /* Without IAC the input is plain data: passed through untouched. */
            CHECK(whole.data_len == size && whole.replies_len == 0 && !whole.t.seen);
        }
    }

    /* Escaped output read back by a telnet parser is the same bytes, with no
     * command in it. */
    static unsigned char esc[2 << 16], back[2 << 16];
    size_t n = proto_telnet_escape(data, size, esc);
    CHECK(n == proto_telnet_escaped_len(data, size));
    proto_telnet t;
    proto_telnet_init(&t);
    size_t out_len, total = 0, pos = 0;
    unsigned ev;
    while (pos < n) {
        size_t used =
            proto_telnet_feed(&t, esc + pos, n - pos, back + total, &out_len, &ev);
        CHECK(used > 0 && ev == 0);
        total += out_len;
        pos += used;
    }
    CHECK(total == size && memcmp(back, data, size) == 0 && !t.seen && t.reply_len == 0);
    return 0;
}
