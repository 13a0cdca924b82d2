/* wsclient.c - a test client for race2048d's HTTP and WebSocket side, over the
 * harness's raw sockets. Fails the running test on any surprise, like the harness. */
#include "wsclient.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Reads exactly len bytes or fails. */
static void read_exact(client *c, void *buf, size_t len, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    size_t got = 0;
    while (got < len) {
        size_t n = client_read_raw(c, (char *)buf + got, len - got,
                                   harness_remaining(deadline) + 1);
        if (n == 0) fail_msg("EOF after %zu of %zu bytes", got, len);
        got += n;
    }
}

void http_read(client *c, http_response *r, bool head_only, int ms) {
    memset(r, 0, sizeof *r);
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    size_t n = 0;
    while (n < 4 || memcmp(r->head + n - 4, "\r\n\r\n", 4) != 0) {
        if (n + 1 >= sizeof r->head) fail_msg("response head too long");
        if (client_read_raw(c, r->head + n, 1, harness_remaining(deadline) + 1) == 0)
            fail_msg("EOF in a response head (%zu bytes: %.*s)", n, (int)n, r->head);
        n++;
    }
    r->head[n] = '\0';
    if (sscanf(r->head, "HTTP/1.1 %d ", &r->status) != 1)
        fail_msg("not an HTTP/1.1 status line: %s", r->head);
    char len[32];
    if (!http_header(r, "Content-Length", len, sizeof len)) fail_msg("no Content-Length");
    size_t body = (size_t)strtoull(len, NULL, 10);
    r->body = malloc(body + 1);
    assert_non_null(r->body);
    if (!head_only) {
        read_exact(c, r->body, body, harness_remaining(deadline) + 1);
        r->body_len = body;
    }
    r->body[r->body_len] = '\0';
}

void http_response_free(http_response *r) {
    free(r->body);
    r->body = NULL;
}

bool http_header(const http_response *r, const char *name, char *out, size_t cap) {
    size_t nlen = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ')
                v++;
            size_t vlen = strcspn(v, "\r");
            if (vlen >= cap) vlen = cap - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return true;
        }
    }
    return false;
}

/* The handshake on a fresh connection c; returns c. */
static client *ws_handshake(client *c) {
    static const char req[] = "GET /ws HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\n"
                              "Connection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Version: 13\r\n\r\n";
    client_send_raw(c, req, sizeof req - 1, false);
    char head[1024];
    size_t n = 0;
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (n < 4 || memcmp(head + n - 4, "\r\n\r\n", 4) != 0) {
        if (n + 1 >= sizeof head) fail_msg("101 head too long");
        if (client_read_raw(c, head + n, 1, harness_remaining(deadline) + 1) == 0)
            fail_msg("EOF in the WebSocket handshake");
        n++;
    }
    head[n] = '\0';
    if (strncmp(head, "HTTP/1.1 101 ", 13) != 0) fail_msg("no 101: %s", head);
    if (!strstr(head, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        fail_msg("wrong accept key: %s", head);
    return c;
}

client *ws_connect_rcvbuf(th_server *s, int rcvbuf) {
    return ws_handshake(rcvbuf > 0 ? client_connect_rcvbuf(s, rcvbuf)
                                   : client_connect(s));
}

client *ws_connect(th_server *s) {
    return ws_connect_rcvbuf(s, 0);
}

client *ws_connect_port(th_server *s, int port) {
    return ws_handshake(client_connect_port(s, port));
}

void ws_send_frame(client *c, bool fin, int opcode, const void *payload, size_t len,
                   bool unmasked) {
    static const unsigned char key[4] = {0x12, 0x34, 0x56, 0x78};
    unsigned char *f = malloc(len + 14);
    assert_non_null(f);
    size_t n = 0;
    f[n++] = (unsigned char)((fin ? 0x80 : 0) | opcode);
    unsigned char mask = unmasked ? 0 : 0x80;
    if (len < 126) {
        f[n++] = (unsigned char)(mask | len);
    } else if (len <= 0xFFFF) {
        f[n++] = mask | 126;
        f[n++] = (unsigned char)(len >> 8);
        f[n++] = (unsigned char)len;
    } else {
        f[n++] = mask | 127;
        for (int i = 7; i >= 0; i--)
            f[n++] = (unsigned char)((uint64_t)len >> (8 * i));
    }
    if (!unmasked) {
        memcpy(f + n, key, 4);
        n += 4;
    }
    const unsigned char *p = payload;
    for (size_t i = 0; i < len; i++)
        f[n + i] = (unsigned char)(p[i] ^ (unmasked ? 0 : key[i % 4]));
    client_send_raw(c, f, n + len, false);
    free(f);
}

void ws_send(client *c, const char *fmt, ...) {
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof msg);
    ws_send_frame(c, true, 1, msg, (size_t)n, false);
}

int ws_read_frame(client *c, char *buf, size_t cap, size_t *len, int ms) {
    unsigned char h[2];
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    size_t got = client_read_raw(c, h, 1, harness_remaining(deadline) + 1);
    if (got == 0) return -1;
    read_exact(c, h + 1, 1, harness_remaining(deadline) + 1);
    if (!(h[0] & 0x80)) fail_msg("server frame not final");
    if (h[1] & 0x80) fail_msg("server frame masked");
    uint64_t n = h[1] & 0x7f;
    if (n == 126) {
        unsigned char e[2];
        read_exact(c, e, 2, harness_remaining(deadline) + 1);
        n = (uint64_t)e[0] << 8 | e[1];
    } else if (n == 127) {
        unsigned char e[8];
        read_exact(c, e, 8, harness_remaining(deadline) + 1);
        n = 0;
        for (int i = 0; i < 8; i++)
            n = n << 8 | e[i];
    }
    if (n + 1 > cap)
        fail_msg("frame of %llu bytes too big for the test", (unsigned long long)n);
    read_exact(c, buf, (size_t)n, harness_remaining(deadline) + 1);
    buf[n] = '\0';
    *len = (size_t)n;
    return h[0] & 0x0f;
}

json_t *ws_next(client *c, int ms) {
    static char buf[1 << 20];
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        size_t len;
        int op = ws_read_frame(c, buf, sizeof buf, &len, harness_remaining(deadline) + 1);
        if (op == -1 || op == 8) return NULL;
        if (op == 0xA) continue;
        if (op != 1) fail_msg("unexpected opcode %d", op);
        if (len && buf[len - 1] == '\n') fail_msg("a message must not end in a newline");
        if (!harness_compact(buf, len)) fail_msg("not compact: %s", buf);
        json_error_t e;
        json_t *o = json_loadb(buf, len, 0, &e);
        if (!o || !json_is_string(json_object_get(o, "type")))
            fail_msg("not a JSON object with a type: %s", buf);
        return harness_keep(o);
    }
}

json_t *ws_expect_skip(client *c, const char *type, const char *skip, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        json_t *o = ws_next(c, harness_remaining(deadline) + 1);
        if (!o) fail_msg("closed while waiting for %s", type);
        const char *t = jstr(o, "type");
        if (!strcmp(t, type)) return o;
        size_t tl = strlen(t);
        bool skipped = false;
        for (const char *p = skip; p && *p;) {
            size_t wl = strcspn(p, " ");
            if (wl == tl && !strncmp(p, t, tl)) skipped = true;
            p += wl;
            while (*p == ' ')
                p++;
        }
        if (!skipped) {
            char *dump = json_dumps(o, JSON_COMPACT);
            fail_msg("expected %s, got %s", type, dump);
        }
    }
}

json_t *ws_expect(client *c, const char *type, int ms) {
    return ws_expect_skip(c, type, NULL, ms);
}

int ws_expect_close(client *c, int ms) {
    char buf[256];
    size_t len;
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        int op = ws_read_frame(c, buf, sizeof buf, &len, harness_remaining(deadline) + 1);
        if (op == 8)
            return len >= 2 ? (unsigned char)buf[0] << 8 | (unsigned char)buf[1] : 0;
        if (op == -1) fail_msg("EOF without a close frame");
        if (op != 0xA && op != 1) fail_msg("unexpected opcode %d before the close", op);
    }
}

json_t *http_api_get(th_server *s, const char *target, int *status) {
    client *c = client_connect(s);
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", target);
    client_send_raw(c, req, (size_t)n, false);
    http_response r;
    http_read(c, &r, false, WAIT);
    *status = r.status;
    char type[64];
    assert_true(http_header(&r, "Content-Type", type, sizeof type));
    assert_string_equal(type, "application/json");
    json_t *o = json_loads(r.body, 0, NULL);
    assert_non_null(o);
    http_response_free(&r);
    client_close(c);
    return harness_keep(o);
}
