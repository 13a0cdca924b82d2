/* fuzz_http.c - libFuzzer target: HTTP requests then WebSocket frames, as a browser's
 * connection brings them, fed whole and in input-chosen chunks. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) abort();                                                            \
    } while (0)

#define MAX_MSG 64

/* What a run produced, folded into a hash so runs compare cheaply. */
typedef struct result {
    uint64_t hash;
    int requests, messages, too_long;
    bool failed; /* BAD or TOO_LARGE: where it stops may depend on the cuts */
    bool upgraded;
    bool ws_closed;
} result;

static void mix(uint64_t *h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ b[i]) * 1099511628211u;
}

static void on_text(void *ctx, const char *msg, size_t len) {
    result *r = ctx;
    CHECK(len > 0 && len <= MAX_MSG);
    mix(&r->hash, "T", 1);
    mix(&r->hash, msg, len);
    r->messages++;
}

static void on_too_long(void *ctx) {
    result *r = ctx;
    mix(&r->hash, "!", 1);
    r->too_long++;
}

static void on_output(void *ctx, const char *data, size_t len) {
    CHECK(len > 0);
}

static const proto_ws_handlers handlers = {on_text, on_too_long, on_output};

static void run(const uint8_t *data, size_t size, size_t chunk, result *r) {
    memset(r, 0, sizeof *r);
    r->hash = 14695981039346656037u;
    proto_http h;
    proto_http_init(&h);
    proto_ws *ws = NULL;
    size_t off = 0;
    while (off < size && !r->failed && !r->ws_closed) {
        size_t n = size - off < chunk ? size - off : chunk;
        const char *p = (const char *)data + off;
        if (ws) {
            if (!proto_ws_feed(ws, p, n)) r->ws_closed = true;
            off += n;
            continue;
        }
        size_t used;
        proto_http_result res = proto_http_feed(&h, p, n, &used);
        CHECK(used <= n);
        off += used;
        switch (res) {
        case PROTO_HTTP_MORE:
            CHECK(used == n);
            break;
        case PROTO_HTTP_REQUEST:
        case PROTO_HTTP_UPGRADE:
            CHECK(strlen(h.req.target) <= PROTO_HTTP_TARGET_MAX);
            CHECK(strlen(h.req.ws_key) < sizeof h.req.ws_key);
            mix(&r->hash, &h.req.method, sizeof h.req.method);
            mix(&r->hash, h.req.target, strlen(h.req.target));
            mix(&r->hash, &h.req.keep_alive, sizeof h.req.keep_alive);
            mix(&r->hash, &h.req.upgrade_websocket, sizeof h.req.upgrade_websocket);
            mix(&r->hash, h.req.ws_key, strlen(h.req.ws_key));
            {
                /* The Origin rule reads what the client sent: it must not
                 * crash, and a kept origin came in an Origin header. */
                bool same = proto_http_same_origin(h.req.origin, h.req.host);
                bool listed = proto_http_origin_listed(h.req.origin, h.req.host);
                mix(&r->hash, &same, sizeof same);
                mix(&r->hash, &listed, sizeof listed);
                CHECK(!same || h.req.has_origin);
            }
            {
                /* Game links read the target: any bytes, no crash, sane fields. */
                proto_http_route route = proto_http_route_of(h.req.target);
                CHECK(route.limit >= 0 && route.limit <= 100);
                CHECK(!route.has_game || route.kind == PROTO_ROUTE_GAME_PAGE ||
                      route.kind == PROTO_ROUTE_API_GAME);
                mix(&r->hash, &route.kind, sizeof route.kind);
                mix(&r->hash, &route.game, sizeof route.game);
            }
            r->requests++;
            if (res == PROTO_HTTP_UPGRADE && h.req.upgrade_websocket) {
                ws = proto_ws_new(MAX_MSG, &handlers, r);
                CHECK(ws);
                r->upgraded = true;
            } else if (res == PROTO_HTTP_UPGRADE) {
                r->failed = true;
            } else {
                proto_http_next(&h);
            }
            break;
        case PROTO_HTTP_BAD:
        case PROTO_HTTP_TOO_LARGE:
            r->failed = true;
            break;
        }
    }
    if (ws) {
        if (r->ws_closed) CHECK(!proto_ws_open(ws) && proto_ws_close_code(ws) != 0);
        proto_ws_free(ws);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    size_t chunk = 1 + data[0] % 7;
    result whole, cut;
    run(data + 1, size - 1, size, &whole);
    run(data + 1, size - 1, chunk, &cut);
    if (!whole.failed && !cut.failed && !whole.ws_closed && !cut.ws_closed) {
        CHECK(whole.hash == cut.hash);
        CHECK(whole.requests == cut.requests && whole.messages == cut.messages);
    }
    return 0;
}
