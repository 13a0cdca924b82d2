/* test_telnet.c - telnet negotiation, NAWS, Ctrl-C and keys, the same however the bytes
 * are split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "telnet.h"

/* What a connection made of some input: its data bytes, its events (each
 * with how many data bytes came before it, which does not depend on how
 * the input was cut, since a feed stops after an event), the replies it
 * sent, and the keys the data decodes to. */
typedef struct trace {
    unsigned char data[4096];
    size_t data_len;
    char events[1024];
    unsigned char replies[4096];
    size_t replies_len;
    char keys[1024];
    int interrupts;
    proto_telnet t;
} trace;

static void append(char *s, size_t cap, const char *add) {
    size_t len = strlen(s);
    assert_true(len + strlen(add) < cap);
    strcpy(s + len, add);
}

static void key_text(char *s, size_t cap, const proto_key *k) {
    static const char arrows[] = "<>^v"; /* ENG_LEFT, RIGHT, UP, DOWN */
    char buf[8];
    switch (k->type) {
    case PROTO_KEY_MOVE:
        snprintf(buf, sizeof buf, "%c%c ", arrows[k->dir], k->ch ? k->ch : '*');
        break;
    case PROTO_KEY_ENTER:
        snprintf(buf, sizeof buf, "ENT ");
        break;
    case PROTO_KEY_BACKSPACE:
        snprintf(buf, sizeof buf, "BS ");
        break;
    case PROTO_KEY_CTRL_C:
        snprintf(buf, sizeof buf, "^C ");
        break;
    case PROTO_KEY_CTRL_D:
        snprintf(buf, sizeof buf, "^D ");
        break;
    case PROTO_KEY_KILL_LINE:
        snprintf(buf, sizeof buf, "^U ");
        break;
    case PROTO_KEY_COLON:
        snprintf(buf, sizeof buf, ":%c ", k->ch);
        break;
    case PROTO_KEY_ESCAPE:
        snprintf(buf, sizeof buf, "ESC ");
        break;
    case PROTO_KEY_CHAR:
        snprintf(buf, sizeof buf, "'%c' ", k->ch);
        break;
    }
    append(s, cap, buf);
}

/* Feeds in, cut into chunks of the given sizes (cycled; 0 = the rest), the
 * way a server would: after each call, take the replies, note the events,
 * pass the data through the key decoder, and go on with what is left. */
static void run(trace *tr, const unsigned char *in, size_t n, bool offered,
                const size_t *cuts, size_t ncuts) {
    memset(tr, 0, sizeof *tr);
    proto_telnet_init(&tr->t);
    if (offered) proto_telnet_offered(&tr->t);
    proto_keys keys;
    proto_keys_init(&keys);
    size_t pos = 0, k = 0;
    while (pos < n) {
        size_t chunk = ncuts ? cuts[k++ % ncuts] : 0;
        if (chunk == 0 || chunk > n - pos) chunk = n - pos;
        const unsigned char *p = in + pos;
        size_t left = chunk;
        while (left > 0) {
            unsigned char out[4096];
            size_t out_len, rlen;
            unsigned ev;
            size_t used = proto_telnet_feed(&tr->t, p, left, out, &out_len, &ev);
            assert_true(used > 0 && used <= left);
            assert_true(out_len <= used);
            assert_true(tr->data_len + out_len <= sizeof tr->data);
            memcpy(tr->data + tr->data_len, out, out_len);
            tr->data_len += out_len;
            for (size_t i = 0; i < out_len; i++) {
                proto_key got[2];
                int nk = proto_keys_feed(&keys, out[i], got);
                assert_true(nk >= 0 && nk <= 2);
                for (int j = 0; j < nk; j++)
                    key_text(tr->keys, sizeof tr->keys, &got[j]);
            }
            const unsigned char *r = proto_telnet_replies(&tr->t, &rlen);
            assert_true(tr->replies_len + rlen <= sizeof tr->replies);
            memcpy(tr->replies + tr->replies_len, r, rlen);
            tr->replies_len += rlen;
            assert_int_equal(tr->t.reply_len, 0);
            char buf[64];
            if (ev & PROTO_TN_EV_TELNET) {
                snprintf(buf, sizeof buf, "telnet@%zu ", tr->data_len);
                append(tr->events, sizeof tr->events, buf);
            }
            if (ev & PROTO_TN_EV_ECHO) {
                snprintf(buf, sizeof buf, "echo=%d@%zu ", tr->t.echo, tr->data_len);
                append(tr->events, sizeof tr->events, buf);
            }
            if (ev & PROTO_TN_EV_RESIZE) {
                snprintf(buf, sizeof buf, "size=%ux%u@%zu ", tr->t.width, tr->t.height,
                         tr->data_len);
                append(tr->events, sizeof tr->events, buf);
            }
            if (ev & PROTO_TN_EV_INTERRUPT)
                tr->interrupts++; /* no position: it does not stop the feed */
            p += used;
            left -= used;
        }
        pos += chunk;
    }
    proto_key last;
    if (proto_keys_flush(&keys, &last)) key_text(tr->keys, sizeof tr->keys, &last);
}

static void assert_same(const trace *a, const trace *b) {
    assert_int_equal(a->data_len, b->data_len);
    assert_memory_equal(a->data, b->data, a->data_len);
    assert_string_equal(a->events, b->events);
    assert_int_equal(a->replies_len, b->replies_len);
    assert_memory_equal(a->replies, b->replies, a->replies_len);
    assert_string_equal(a->keys, b->keys);
    /* Several interrupts in one call are one bit: compare whether any came. */
    assert_int_equal(a->interrupts > 0, b->interrupts > 0);
    assert_int_equal(a->t.width, b->t.width);
    assert_int_equal(a->t.height, b->t.height);
    assert_int_equal(a->t.echo, b->t.echo);
    assert_int_equal(a->t.seen, b->t.seen);
}

/* Runs in whole, then one byte at a time, at every split point, at every
 * pair of split points (short inputs) and in random pieces: all the same.
 * Returns the whole run for the caller's own assertions. */
static const trace *check_splits(const unsigned char *in, size_t n, bool offered) {
    static trace whole, cut;
    run(&whole, in, n, offered, NULL, 0);
    size_t one = 1;
    run(&cut, in, n, offered, &one, 1);
    assert_same(&whole, &cut);
    for (size_t a = 1; a < n; a++) {
        size_t cuts[2] = {a, 0};
        run(&cut, in, n, offered, cuts, 2);
        assert_same(&whole, &cut);
        for (size_t b = 1; n <= 64 && a + b < n; b++) {
            size_t cuts3[3] = {a, b, 0};
            run(&cut, in, n, offered, cuts3, 3);
            assert_same(&whole, &cut);
        }
    }
    uint32_t seed = 2048;
    for (int round = 0; round < 100; round++) {
        size_t cuts[8];
        for (size_t i = 0; i < 8; i++) {
            seed = seed * 1103515245u + 12345u;
            cuts[i] = 1 + (seed >> 16) % 5;
        }
        run(&cut, in, n, offered, cuts, 8);
        assert_same(&whole, &cut);
    }
    return &whole;
}

#define SPLITS(in, offered)                                                              \
    check_splits((const unsigned char *)(in), sizeof(in) - 1, offered)

static void assert_replies(const trace *tr, const char *want, size_t n) {
    assert_int_equal(tr->replies_len, n);
    assert_memory_equal(tr->replies, want, n);
}
#define REPLIES(tr, want) assert_replies(tr, want, sizeof(want) - 1)

static void test_answer_to_offer_is_acknowledged_silently(void **state) {
    /* inetutils telnet answering WILL ECHO, WILL SGA, DO NAWS. */
    const trace *tr = SPLITS("\xff\xfd\x01\xff\xfd\x03\xff\xfb\x1f"
                             "\xff\xfa\x1f\x00\x64\x00\x1e\xff\xf0",
                             true);
    REPLIES(tr, "");
    assert_string_equal(tr->events, "telnet@0 echo=1@0 size=100x30@0 ");
    assert_int_equal(tr->data_len, 0);
    assert_true(tr->t.echo);
    assert_true(tr->t.seen);
    assert_int_equal(tr->t.width, 100);
    assert_int_equal(tr->t.height, 30);
}

static void test_unoffered_requests_are_agreed_once(void **state) {
    /* Without our offer, DO ECHO / DO SGA / WILL NAWS are requests: agreed
     * once, and a repeat is not answered again (no loop). */
    const trace *tr = SPLITS("\xff\xfd\x01\xff\xfd\x03\xff\xfb\x1f"
                             "\xff\xfd\x01\xff\xfd\x03\xff\xfb\x1f",
                             false);
    REPLIES(tr, "\xff\xfb\x01\xff\xfb\x03\xff\xfd\x1f");
    assert_true(tr->t.echo);
}

static void test_client_turns_echo_off(void **state) {
    const trace *tr = SPLITS("\xff\xfd\x01"
                             "ab"
                             "\xff\xfe\x01\xff\xfe\x01"
                             "c",
                             true);
    /* DONT ECHO after YES gets the WONT RFC 1143 asks for, once. */
    REPLIES(tr, "\xff\xfc\x01");
    assert_string_equal(tr->events, "telnet@0 echo=1@0 echo=0@2 ");
    assert_false(tr->t.echo);
    assert_int_equal(tr->data_len, 3);
    assert_memory_equal(tr->data, "abc", 3);
}

static void test_refused_offer_gets_no_reply(void **state) {
    /* A client that says DONT ECHO / DONT SGA / WONT NAWS to our offer. */
    const trace *tr = SPLITS("\xff\xfe\x01\xff\xfe\x03\xff\xfc\x1f", true);
    REPLIES(tr, "");
    assert_string_equal(tr->events, "telnet@0 ");
    assert_false(tr->t.echo);
}

static void test_naws_and_resize(void **state) {
    const trace *tr = SPLITS("\xff\xfb\x1f\xff\xfa\x1f\x00\x64\x00\x1e\xff\xf0"
                             "w"
                             "\xff\xfa\x1f\x00\x78\x00\x28\xff\xf0",
                             true);
    REPLIES(tr, "");
    assert_string_equal(tr->events, "telnet@0 size=100x30@0 size=120x40@1 ");
    assert_int_equal(tr->t.width, 120);
    assert_int_equal(tr->t.height, 40);
    assert_string_equal(tr->keys, "^w ");
}

static void test_iac_iac_in_naws_and_data(void **state) {
    /* Width 255 is sent as 00 ff ff; a data 0xFF as ff ff. */
    const trace *tr = SPLITS("\xff\xfa\x1f\x00\xff\xff\x01\x00\xff\xf0"
                             "a\xff\xff"
                             "b",
                             true);
    assert_int_equal(tr->t.width, 255);
    assert_int_equal(tr->t.height, 256);
    assert_int_equal(tr->data_len, 3);
    assert_memory_equal(tr->data,
                        "a\xff"
                        "b",
                        3);
}

static void test_bad_naws_ignored(void **state) {
    /* Too short, too long (past the SB buffer), another option: no size. */
    const trace *tr = SPLITS("\xff\xfa\x1f\x00\x50\xff\xf0"
                             "\xff\xfa\x1f"
                             "0123456789012345678901234567890123456789"
                             "\xff\xf0"
                             "\xff\xfa\x18\x00\x50\x00\x18\xff\xf0"
                             "x",
                             true);
    assert_int_equal(tr->t.width, 0);
    assert_int_equal(tr->t.height, 0);
    assert_string_equal(tr->events, "telnet@0 ");
    assert_int_equal(tr->data_len, 1);
}

static void test_command_inside_subnegotiation(void **state) {
    /* IAC DO inside SB: the subnegotiation is dropped, the DO handled. */
    const trace *tr = SPLITS("\xff\xfa\x1f\x00\x50\xff\xfd\x18"
                             "z",
                             true);
    REPLIES(tr, "\xff\xfc\x18");
    assert_int_equal(tr->t.width, 0);
    assert_int_equal(tr->data_len, 1);
    assert_memory_equal(tr->data, "z", 1);
}

static void test_unknown_options_refused_once(void **state) {
    /* TTYPE, twice each way, then WONT/DONT, which are never answered. */
    const trace *tr = SPLITS("\xff\xfd\x18\xff\xfd\x18\xff\xfb\x18\xff\xfb\x18"
                             "\xff\xfc\x18\xff\xfe\x18\xff\xfc\x05\xff\xfe\x05",
                             true);
    REPLIES(tr, "\xff\xfc\x18\xff\xfe\x18");
}

static void test_ctrl_c_and_timing_mark(void **state) {
    /* Line-mode Ctrl-C: IAC IP, IAC DO TIMING-MARK; answered WONT TM. */
    const trace *tr = SPLITS("ab\xff\xf4\xff\xfd\x06"
                             "c",
                             false);
    REPLIES(tr, "\xff\xfc\x06");
    assert_string_equal(tr->events, "telnet@2 ");
    assert_int_equal(tr->interrupts, 1);
    assert_int_equal(tr->data_len, 3);
}

static void test_interrupt_feed_collects_timing_mark_reply(void **state) {
    /* Both in one read, after the client is known as telnet: one call sees
     * the interrupt and already holds the WONT TIMING-MARK to send first. */
    proto_telnet t;
    proto_telnet_init(&t);
    t.seen = true;
    const unsigned char in[] = "\xff\xf4\xff\xfd\x06";
    unsigned char out[8];
    size_t out_len, rlen;
    unsigned ev;
    assert_int_equal(proto_telnet_feed(&t, in, 5, out, &out_len, &ev), 5);
    assert_int_equal(ev, PROTO_TN_EV_INTERRUPT);
    const unsigned char *r = proto_telnet_replies(&t, &rlen);
    assert_int_equal(rlen, 3);
    assert_memory_equal(r, "\xff\xfc\x06", 3);
}

static void test_every_timing_mark_answered(void **state) {
    /* Forty DO TM: more replies than the buffer holds at once, so feeds
     * stop early; all forty answers still come out, in order. */
    unsigned char in[120], want[120];
    for (int i = 0; i < 40; i++) {
        memcpy(in + 3 * i, "\xff\xfd\x06", 3);
        memcpy(want + 3 * i, "\xff\xfc\x06", 3);
    }
    const trace *tr = check_splits(in, sizeof in, true);
    assert_replies(tr, (const char *)want, sizeof want);
}

static void test_other_commands_mark_telnet(void **state) {
    /* NOP, GA, AYT: no data, no reply, but a telnet client; "IAC x" with x
     * below the commands is dropped without counting. */
    const trace *tr = SPLITS("a\xff\x10"
                             "b\xff\xf1\xff\xf9\xff\xf6"
                             "c",
                             false);
    REPLIES(tr, "");
    assert_string_equal(tr->events, "telnet@2 ");
    assert_int_equal(tr->data_len, 3);
    assert_memory_equal(tr->data, "abc", 3);
}

static void test_plain_text_is_not_telnet(void **state) {
    const trace *tr = SPLITS("help\r\nsolo 4\r\n", false);
    assert_false(tr->t.seen);
    assert_string_equal(tr->events, "");
    assert_int_equal(tr->data_len, 14);
}

static void test_keys_char_mode(void **state) {
    /* What inetutils telnet sends in character mode, keys run together. */
    const trace *tr = SPLITS("wasdhjklWASD"
                             "\x1b[A\x1b[B\x1b[C\x1b[D"
                             "\x1bOA\x1bOB\x1bOC\x1bOD"
                             "\r\0\r\n\r\x7f\n\x08"
                             "\x03\x04\x15:x \x1b",
                             true);
    assert_string_equal(tr->keys, "^w <a vs >d <h vj ^k >l ^W <A vS >D "
                                  "^* v* >* <* ^* v* >* <* "
                                  "ENT ENT ENT BS ENT BS "
                                  "^C ^D ^U :: 'x' ' ' ESC ");
}

static void test_keys_escape_alone(void **state) {
    /* Esc then not '[' / 'O': an Esc key and the byte's own key. Esc Esc
     * [ A: an Esc, then up. Unknown sequences and controls: nothing. */
    const trace *tr =
        SPLITS("\x1bx\x1b\x1b[A\x1b[3~\x1b[1;5C\x1bOP\x1b[\rq\x01\x1b:", false);
    assert_string_equal(tr->keys, "ESC 'x' ESC ^* >* ENT 'q' ESC :: ");
}

static void test_keys_pending_and_flush(void **state) {
    proto_keys k;
    proto_key out[2];
    proto_keys_init(&k);
    assert_false(proto_keys_pending(&k));
    assert_int_equal(proto_keys_feed(&k, 0x1b, out), 0);
    assert_true(proto_keys_pending(&k));
    assert_true(proto_keys_flush(&k, &out[0]));
    assert_int_equal(out[0].type, PROTO_KEY_ESCAPE);
    assert_false(proto_keys_pending(&k));
    assert_false(proto_keys_flush(&k, &out[0]));
    /* A half arrow is not an Esc key: dropped, and the next byte is plain. */
    assert_int_equal(proto_keys_feed(&k, 0x1b, out), 0);
    assert_int_equal(proto_keys_feed(&k, '[', out), 0);
    assert_false(proto_keys_pending(&k));
    assert_false(proto_keys_flush(&k, &out[0]));
    assert_int_equal(proto_keys_feed(&k, 'B', out), 1);
    assert_int_equal(out[0].type, PROTO_KEY_CHAR);
    assert_int_equal(out[0].ch, 'B');
}

/* Non-ASCII bytes are text (a command line keeps them, to refuse them as
 * netcat's line would), never dropped; other control bytes still are. */
static void test_keys_non_ascii_are_chars(void **state) {
    (void)state;
    proto_keys k;
    proto_key out[2];
    proto_keys_init(&k);
    static const unsigned char typed[] = {0xc3, 0xa9, 0xf0, 0x9f, 0x99, 0x82, 0xff};
    for (size_t i = 0; i < sizeof typed; i++) {
        assert_int_equal(proto_keys_feed(&k, typed[i], out), 1);
        assert_int_equal(out[0].type, PROTO_KEY_CHAR);
        assert_int_equal((unsigned char)out[0].ch, typed[i]);
    }
    assert_int_equal(proto_keys_feed(&k, 0x01, out), 0);
    assert_int_equal(proto_keys_feed(&k, 0x00, out), 0);
}

static void test_keys_long_csi_bounded(void **state) {
    /* Endless parameters: given up after a while, later keys work. */
    proto_keys k;
    proto_key out[2];
    proto_keys_init(&k);
    proto_keys_feed(&k, 0x1b, out);
    proto_keys_feed(&k, '[', out);
    for (int i = 0; i < 1000; i++)
        proto_keys_feed(&k, '1', out);
    assert_int_equal(proto_keys_feed(&k, 'w', out), 1);
    assert_int_equal(out[0].type, PROTO_KEY_MOVE);
    assert_int_equal(out[0].dir, ENG_UP);
}

static void test_escape_doubles_ff(void **state) {
    const unsigned char in[] = {'a', 0xff, 'b', 0xff, 0xff};
    unsigned char out[10];
    assert_int_equal(proto_telnet_escaped_len(in, sizeof in), 8);
    assert_int_equal(proto_telnet_escape(in, sizeof in, out), 8);
    assert_memory_equal(out,
                        "a\xff\xff"
                        "b\xff\xff\xff\xff",
                        8);
    assert_int_equal(proto_telnet_escape(in, 0, out), 0);
    assert_int_equal(proto_telnet_escaped_len("abc", 3), 3);
}

static void test_offer_bytes(void **state) {
    assert_int_equal(sizeof PROTO_TELNET_OFFER - 1, PROTO_TELNET_OFFER_LEN);
    assert_int_equal(sizeof PROTO_TELNET_OFFER_DCS - 1, PROTO_TELNET_OFFER_DCS_LEN);
    assert_memory_equal(PROTO_TELNET_OFFER_DCS,
                        "\x1b\x50\xff\xfb\x01\xff\xfb\x03\xff\xfd\x1f\x1b\x5c", 13);
    /* No 0x18 (CAN) inside: it would cancel the DCS string. */
    assert_null(memchr(PROTO_TELNET_OFFER_DCS, 0x18, PROTO_TELNET_OFFER_DCS_LEN));
}

static void test_in_place_feed(void **state) {
    /* out may be the input buffer itself. */
    unsigned char buf[] = "a\xff\xff"
                          "b\xff\xfd\x18"
                          "c";
    proto_telnet t;
    proto_telnet_init(&t);
    size_t out_len, total = 0, pos = 0, n = sizeof buf - 1;
    unsigned ev;
    while (pos < n) {
        size_t used =
            proto_telnet_feed(&t, buf + pos, n - pos, buf + total, &out_len, &ev);
        total += out_len;
        pos += used;
    }
    assert_int_equal(total, 4);
    assert_memory_equal(buf,
                        "a\xff"
                        "bc",
                        4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer_to_offer_is_acknowledged_silently),
        cmocka_unit_test(test_unoffered_requests_are_agreed_once),
        cmocka_unit_test(test_client_turns_echo_off),
        cmocka_unit_test(test_refused_offer_gets_no_reply),
        cmocka_unit_test(test_naws_and_resize),
        cmocka_unit_test(test_iac_iac_in_naws_and_data),
        cmocka_unit_test(test_bad_naws_ignored),
        cmocka_unit_test(test_command_inside_subnegotiation),
        cmocka_unit_test(test_unknown_options_refused_once),
        cmocka_unit_test(test_ctrl_c_and_timing_mark),
        cmocka_unit_test(test_interrupt_feed_collects_timing_mark_reply),
        cmocka_unit_test(test_every_timing_mark_answered),
        cmocka_unit_test(test_other_commands_mark_telnet),
        cmocka_unit_test(test_plain_text_is_not_telnet),
        cmocka_unit_test(test_keys_char_mode),
        cmocka_unit_test(test_keys_escape_alone),
        cmocka_unit_test(test_keys_pending_and_flush),
        cmocka_unit_test(test_keys_non_ascii_are_chars),
        cmocka_unit_test(test_keys_long_csi_bounded),
        cmocka_unit_test(test_escape_doubles_ff),
        cmocka_unit_test(test_offer_bytes),
        cmocka_unit_test(test_in_place_feed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
