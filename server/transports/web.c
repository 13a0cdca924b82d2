/* web.c - browsers on the game port: HTTP requests (the built-in web client, /healthz,
 * /metrics, game links and their JSON) and WebSocket connections that speak JSON mode. */
#include "web.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cidr.h"
#include "arena_host.h"
#include "lobby.h"
#include "session.h"
#include "metrics.h"
#include "transport.h"
#include "web_assets.h"

/* An HTTP connection (not a WebSocket) idle this long is closed, whatever
 * --idle-timeout says: a browser keeps a few open after loading the page;
 * they hold no game, and count towards --max-per-ip. */
#define HTTP_KEEPALIVE_MS 15000

struct web_session {
    proto_http http;
    proto_ws *ws; /* after the upgrade */
    /* A game link or API request handed to the game as the `history` or
     * `replay` request it stands for (session.c, so cluster mode asks every
     * node): its first reply becomes the HTTP response. Until then no other
     * request of this connection is read. */
    proto_http_route_kind awaiting; /* PROTO_ROUTE_NONE: none */
    bool awaiting_head_only, awaiting_keep_alive;
    /* Bytes came after the awaited request (pipelining): dropped, and the
     * connection closed after the response, which tells the client to send
     * them again (RFC 9112 9.3.2). */
    bool close_after;
};

/* ---------------------------------------------------------------- output --- */

/* Sends a response head (copied) and a body (shared, not copied; NULL for
 * none), then closes after the flush unless keep_alive. */
static void respond(conn *c, int status, const char *type, srv_buf *body, size_t body_len,
                    const char *etag, const char *cache, bool head_only,
                    bool keep_alive) {
    char head[512];
    size_t n = proto_http_head(head, sizeof head, status, type, body_len, etag, cache,
                               keep_alive);
    c->srv->metrics.http_requests++;
    if (n == 0) { /* cannot happen with our own short headers */
        conn_close(c);
        return;
    }
    conn_write(c, head, n);
    if (body && !head_only && body_len) conn_send_buf(c, body);
    if (!keep_alive) conn_close_after_flush(c);
}

/* A short text body (copied: these are small and rare). */
static void respond_text(conn *c, int status, const char *text, bool head_only,
                         bool keep_alive) {
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (copy) memcpy(copy, text, len + 1);
    srv_buf *b = srv_buf_take(copy, len);
    if (!b) {
        conn_close(c);
        return;
    }
    respond(c, status, "text/plain; charset=utf-8", b, len, NULL, "no-store", head_only,
            keep_alive);
    srv_buf_unref(b);
}

void web_refuse(conn *c) {
    if (!conn_is_open(c)) return;
    respond_text(c, 503, "The server is full; try again later.\n", false, false);
}

/* The asset's shared buffer: made once, then held for the process's life. */
static srv_buf *asset_buf(size_t i) {
    static srv_buf *bufs[64];
    if (i >= sizeof bufs / sizeof *bufs) return NULL;
    if (!bufs[i]) {
        char *copy = malloc(web_assets[i].len ? web_assets[i].len : 1);
        if (!copy) return NULL;
        memcpy(copy, web_assets[i].data, web_assets[i].len);
        bufs[i] = srv_buf_take(copy, web_assets[i].len);
    }
    return bufs[i];
}

static const web_asset *find_asset(const char *path, size_t *index) {
    for (size_t i = 0; i < web_nassets; i++)
        if (strcmp(web_assets[i].path, path) == 0) {
            *index = i;
            return &web_assets[i];
        }
    return NULL;
}

/* ------------------------------------------------------------- requests --- */

static bool ws_handshake_ok(const proto_http_request *r) {
    return r->method == PROTO_HTTP_GET && r->upgrade_websocket && r->ws_version == 13 &&
           strlen(r->ws_key) == 24;
}

/* A header value for the log: at most 80 bytes, anything but printable
 * ASCII as '?' (the value is the client's, the log the host's terminal). */
static const char *loggable(const char *value, char out[81]) {
    size_t i = 0;
    for (; value[i] && i < 80; i++)
        out[i] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
    out[i] = '\0';
    return out;
}

/* May this upgrade open a WebSocket? A browser says which page asks in
 * Origin: a page of another site, open in a player's browser, would spend
 * the player's per-address budgets (connections, resumes, games) from the
 * player's own address. Programs send no Origin, and are what they are. */
static bool origin_allowed(const conn *c, const proto_http_request *r) {
    return !r->has_origin || proto_http_same_origin(r->origin, r->host) ||
           (c->srv->cfg->allow_origin[0] &&
            proto_http_origin_listed(r->origin, c->srv->cfg->allow_origin));
}

/* /metrics tells how busy the server is and how it is doing: only to the
 * addresses of --metrics-from (the connection's address is the client's,
 * as the per-address limits see it). */
static bool may_scrape(const conn *c) {
    return proto_cidr_list_match(&c->srv->cfg->metrics_from, c->addr, c->addr_len);
}

static void on_ws_text(void *ctx, const char *msg, size_t len) {
    conn *c = ctx;
    if (!conn_is_open(c)) return;
    conn_request_done(c);
    session_json_line(c, msg, len);
}

static void on_ws_too_long(void *ctx) {
    conn_too_long(ctx);
}

static void on_ws_output(void *ctx, const char *data, size_t len) {
    conn_write(ctx, data, len);
}

static const proto_ws_handlers ws_handlers = {on_ws_text, on_ws_too_long, on_ws_output};

/* Answers a GET /ws with a valid handshake: 101, then JSON mode over frames.
 * Returns false (c closed) if the WebSocket cannot be made. */
static bool upgrade(conn *c, const proto_http_request *r) {
    char head[256];
    size_t n = proto_http_ws_accept_head(head, sizeof head, r->ws_key);
    c->web->ws = n ? proto_ws_new(c->srv->cfg->max_line, &ws_handlers, c) : NULL;
    if (!c->web->ws) {
        srv_log_client(SRV_LOG_ERROR, "cannot open a WebSocket for %s", conn_peer(c));
        conn_close(c);
        return false;
    }
    c->srv->metrics.http_requests++;
    c->srv->metrics.ws_upgrades++;
    conn_write(c, head, n);
    conn_set_transport(c, CONN_WS);
    srv_log(SRV_LOG_DEBUG, "WebSocket open from %s (#%llu)", conn_peer(c),
            (unsigned long long)c->id);
    return true;
}

/* ------------------------------------------------------------ game links --- */

/* What /game/ID says for a game that is not (yet) public: a page of its own
 * (the web client itself would need its script to say so). */
static const char game_missing_page[] =
    "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>race2048: no such game</title>\n"
    "<link rel=\"stylesheet\" href=\"/static/style.css\">\n</head>\n<body>\n"
    "<header class=\"top\"><h1>race2048</h1></header>\n<main>\n"
    "<section class=\"view\" id=\"v-missing\">\n<h2>No such game here</h2>\n"
    "<p>This server keeps no finished game with this number that anyone may see: the "
    "link may be mistyped, the game may not have ended yet, or it was played on another "
    "server.</p>\n<p><a href=\"/\">Play race2048</a></p>\n</section>\n</main>\n"
    "</body>\n</html>\n";

/* The HTTP status of an `error` answer to a game link or API request. */
static int error_status(proto_err code) {
    switch (code) {
    case PROTO_ERR_GAME_NOT_FOUND:
    case PROTO_ERR_ARENA_NOT_FOUND:
        return 404;
    case PROTO_ERR_RATE_LIMITED:
        return 429;
    case PROTO_ERR_BUSY:
    case PROTO_ERR_SERVER_FULL:
    case PROTO_ERR_UNAVAILABLE:
        return 503;
    default:
        return 400;
    }
}

/* The error object as a JSON response (for what never reaches the game). */
static void respond_json_error(conn *c, int status, proto_err code, const char *message,
                               bool head_only, bool keep_alive) {
    size_t len = 0;
    char *line = proto_enc_error(code, message, &len);
    srv_buf *b = srv_buf_take(line, len); /* len is set only once the line is made */
    if (!b) {
        conn_close(c);
        return;
    }
    srv_count_error(c->srv, code);
    respond(c, status, "application/json", b, b->len, NULL, "no-store", head_only,
            keep_alive);
    srv_buf_unref(b);
}

/* The first reply to an awaited request: the response. Anything else the
 * game tells this connection's player (its welcome) is not for HTTP. */
static void http_deliver(conn *c, const srv_msg *m) {
    struct web_session *w = c->web;
    if (!w || w->awaiting == PROTO_ROUTE_NONE) return;
    proto_http_route_kind kind = w->awaiting;
    bool arenas = kind == PROTO_ROUTE_API_ARENAS || kind == PROTO_ROUTE_API_ARENA;
    /* The arenas' replies (`arenas`, `arena`) go out as account-kind lines. */
    if (m->type != SRV_MSG_HISTORY && m->type != SRV_MSG_REPLAY &&
        m->type != SRV_MSG_ERROR && !(arenas && m->type == SRV_MSG_ACCOUNT))
        return;
    bool head_only = w->awaiting_head_only;
    bool alive = w->awaiting_keep_alive && !w->close_after && !c->srv->stopping;
    w->awaiting = PROTO_ROUTE_NONE;
    if (!m->json) { /* the line could not be made: memory ran out */
        respond_text(c, 503, "The server is short of memory; try again.\n", head_only,
                     false);
        return;
    }
    if (kind != PROTO_ROUTE_GAME_PAGE) {
        int status = m->type == SRV_MSG_ERROR ? error_status(m->error) : 200;
        respond(c, status, "application/json", m->json, m->json->len, NULL, "no-store",
                head_only, alive);
    } else if (m->type == SRV_MSG_REPLAY) {
        size_t index;
        srv_buf *page = find_asset("/", &index) ? asset_buf(index) : NULL;
        if (!page) {
            conn_close(c);
            return;
        }
        /* The page reads the game from its address (app.js). */
        respond(c, 200, "text/html; charset=utf-8", page, page->len, NULL, "no-cache",
                head_only, alive);
    } else if (m->error == PROTO_ERR_GAME_NOT_FOUND) {
        size_t len = sizeof game_missing_page - 1;
        char *copy = malloc(len);
        if (copy) memcpy(copy, game_missing_page, len);
        srv_buf *b = srv_buf_take(copy, len);
        if (!b) {
            conn_close(c);
            return;
        }
        respond(c, 404, "text/html; charset=utf-8", b, len, NULL, "no-store", head_only,
                alive);
        srv_buf_unref(b);
    } else {
        respond_text(c, error_status(m->error), m->text ? m->text : "Try again later.\n",
                     head_only, alive);
    }
}

/* A game link or API request: handed to the game as the request it stands
 * for, with this connection's player, as a WebSocket's would be (the same
 * budgets, and in cluster mode the same questions to the other nodes). */
static void ask_game(conn *c, proto_http_route route, bool head_only, bool alive) {
    if (route.kind == PROTO_ROUTE_API_HISTORY && !route.limit) {
        respond_json_error(c, 400, PROTO_ERR_BAD_MESSAGE,
                           "limit must be an integer from 1 to 100", head_only, alive);
        return;
    }
    if (route.kind == PROTO_ROUTE_API_ARENA && !route.arena[0]) {
        respond_json_error(c, 404, PROTO_ERR_ARENA_NOT_FOUND, "no arena has that code",
                           head_only, alive);
        return;
    }
    proto_request req = {.type = PROTO_REQ_REPLAY,
                         .limit = route.limit,
                         .has_game = route.has_game,
                         .game = route.game};
    if (route.kind == PROTO_ROUTE_API_HISTORY) req.type = PROTO_REQ_HISTORY;
    /* The arenas as the `arenas` and `arena_results` requests answer them: in
     * cluster mode every node's (asked of the others as for a WebSocket). */
    if (route.kind == PROTO_ROUTE_API_ARENAS) req.type = PROTO_REQ_ARENAS;
    if (route.kind == PROTO_ROUTE_API_ARENA) {
        req.type = PROTO_REQ_ARENA_RESULTS;
        _Static_assert(sizeof req.room >= sizeof route.arena, "an arena code fits");
        memcpy(req.room, route.arena, sizeof route.arena);
    }
    struct web_session *w = c->web;
    w->awaiting = route.kind;
    w->awaiting_head_only = head_only;
    w->awaiting_keep_alive = alive;
    w->close_after = false;
    session_request(c, &req); /* answers at once, or later from other nodes */
}

/* A JSON reply of the /api/ routes (the line an encoder made, taken). */
static void respond_json(conn *c, int status, char *line, size_t len, bool head_only,
                         bool alive) {
    srv_buf *b = line ? srv_buf_take(line, len) : NULL;
    if (!b) {
        conn_close(c);
        return;
    }
    respond(c, status, "application/json", b, b->len, NULL, "no-store", head_only, alive);
    srv_buf_unref(b);
}

/* The integer value of key in a query string ("a=1&limit=5"), or dflt. */
static long query_int(const char *query, const char *key, long dflt) {
    size_t n = strlen(key);
    for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, key, n) || p[n] != '=') continue;
        char *end;
        long v = strtol(p + n + 1, &end, 10);
        return end != p + n + 1 && (*end == '\0' || *end == '&' || *end == '#') ? v : -1;
    }
    return dflt;
}

/* GET /api/leaderboard?board=rating&limit=N, ?board=daily&size=S&date=D, and
 * /api/profile/NAME (version 4): the `leaderboard` and `profile` replies as JSON, or 404
 * with the `error` object. Returns false for any other path. */
static bool answer_accounts_api(conn *c, const proto_http_request *r, const char *path,
                                bool head_only, bool alive) {
    static const char board[] = "/api/leaderboard", profile[] = "/api/profile/";
    game *g = &c->srv->game;
    size_t len = 0;
    if (strcmp(path, board) == 0) {
        const char *query = strchr(r->target, '?');
        query = query ? query + 1 : "";
        long limit = query_int(query, "limit", 20);
        if (strstr(query, "board=daily")) { /* &size=S&date=YYYY-MM-DD */
            long size = query_int(query, "size", 4);
            const char *at = strstr(query, "date=");
            char date[11] = "";
            size_t date_len = at ? strcspn(at + 5, "&") : 0;
            if (at) snprintf(date, sizeof date, "%.*s", (int)date_len, at + 5);
            bool bad_date = at && date_len != 10; /* not cut down to a valid one */
            char *line = NULL;
            if (!bad_date && size >= ENG_SIZE_MIN && size <= ENG_SIZE_MAX && limit >= 1 &&
                limit <= PROTO_LEADERBOARD_MAX)
                line = lobby_daily_board_line(g, (int)size, date, (int)limit, &bad_date,
                                              &len);
            if (!line) {
                line = proto_enc_error(PROTO_ERR_BAD_MESSAGE,
                                       "size must be 3 to 8, limit 1 to 100, date "
                                       "YYYY-MM-DD",
                                       &len);
                respond_json(c, 404, line, len, head_only, alive);
                return true;
            }
            respond_json(c, 200, line, len, head_only, alive);
            return true;
        }
        bool rating = !strstr(query, "board=") || strstr(query, "board=rating");
        if (!rating || limit < 1 || limit > PROTO_LEADERBOARD_MAX) {
            char *line = proto_enc_error(PROTO_ERR_BAD_MESSAGE,
                                         rating ? "limit must be an integer from 1 to 100"
                                                : "only the rating board is served yet",
                                         &len);
            respond_json(c, 404, line, len, head_only, alive);
            return true;
        }
        char *line = lobby_leaderboard_line(g, (int)limit, &len);
        respond_json(c, 200, line, len, head_only, alive);
        return true;
    }
    if (strncmp(path, profile, sizeof profile - 1) == 0) {
        const char *name = path + sizeof profile - 1;
        bool found = false;
        char *line =
            proto_valid_name(name) ? lobby_profile_line(g, name, &found, &len) : NULL;
        if (!found)
            respond_json(c, 404,
                         proto_enc_error(PROTO_ERR_PLAYER_NOT_FOUND,
                                         "no account has that name", &len),
                         len, head_only, alive);
        else
            respond_json(c, 200, line, len, head_only, alive);
        return true;
    }
    return false;
}

static void answer(conn *c, const proto_http_request *r) {
    char path[PROTO_HTTP_TARGET_MAX + 1];
    snprintf(path, sizeof path, "%s", r->target);
    path[strcspn(path, "?#")] = '\0';
    bool head_only = r->method == PROTO_HTTP_HEAD;
    bool alive = r->keep_alive && !c->srv->stopping;
    if (r->method == PROTO_HTTP_OTHER) {
        respond_text(c, 405, "Only GET and HEAD are served here.\n", false, alive);
        return;
    }
    if (strcmp(path, "/healthz") == 0) {
        if (srv_healthy(c->srv))
            respond_text(c, 200, "ok", head_only, alive);
        else
            respond_text(c, 503, "the cluster's NATS cannot be reached\n", head_only,
                         alive);
        return;
    }
    if (strcmp(path, "/metrics") == 0 && may_scrape(c)) {
        srv_buf *b = metrics_render(&c->srv->metrics_reg, c->srv->turn);
        if (!b) {
            conn_close(c);
            return;
        }
        respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b, b->len, NULL,
                "no-store", head_only, alive);
        srv_buf_unref(b);
        return;
    }
    if (answer_accounts_api(c, r, path, head_only, alive)) return;
    if (strcmp(path, "/ws") == 0) {
        respond_text(c, 400, "Open /ws as a WebSocket (RFC 6455, version 13).\n",
                     head_only, false);
        return;
    }
    proto_http_route route = proto_http_route_of(r->target);
    if (route.kind != PROTO_ROUTE_NONE && !r->target_truncated) {
        ask_game(c, route, head_only, alive);
        return;
    }
    size_t index;
    const web_asset *a = r->target_truncated ? NULL : find_asset(path, &index);
    if (!a) {
        respond_text(c, 404, "Not found.\n", head_only, alive);
        return;
    }
    /* Revalidation is cheap and the assets change only with the binary. */
    if (r->if_none_match[0] && strstr(r->if_none_match, a->etag)) {
        respond(c, 304, NULL, NULL, 0, a->etag, "no-cache", true, alive);
        return;
    }
    srv_buf *b = asset_buf(index);
    if (!b) {
        conn_close(c);
        return;
    }
    respond(c, 200, a->content_type, b, b->len, a->etag, "no-cache", head_only, alive);
}

static void http_requests(conn *c, const char *data, size_t n) {
    while (conn_is_open(c)) {
        size_t used;
        proto_http_result res = proto_http_feed(&c->web->http, data, n, &used);
        data += used;
        n -= used;
        switch (res) {
        case PROTO_HTTP_MORE:
            return;
        case PROTO_HTTP_BAD:
            respond_text(c, 400, "Bad request.\n", false, false);
            return;
        case PROTO_HTTP_TOO_LARGE:
            srv_log_client(SRV_LOG_INFO, "431 for %s: request head over %d bytes",
                           conn_peer(c), PROTO_HTTP_HEAD_MAX);
            respond_text(c, 431, "Request head too large.\n", false, false);
            return;
        case PROTO_HTTP_UPGRADE:
            if (ws_handshake_ok(&c->web->http.req) &&
                strcmp(c->web->http.req.target, "/ws") == 0) {
                conn_request_done(c);
                if (!origin_allowed(c, &c->web->http.req)) {
                    char origin[81], host[81];
                    srv_log_client(SRV_LOG_INFO,
                                   "403 for %s: a WebSocket from origin '%s' to host "
                                   "'%s' (--allow-origin)",
                                   conn_peer(c),
                                   loggable(c->web->http.req.origin, origin),
                                   loggable(c->web->http.req.host, host));
                    respond_text(c, 403,
                                 "A page of another site may not open a game here.\n",
                                 false, false);
                    return;
                }
                if (upgrade(c, &c->web->http.req) && n && conn_is_open(c) &&
                    !proto_ws_feed(c->web->ws, data, n))
                    conn_close_after_flush(c);
            } else {
                respond_text(c, 400, "Bad WebSocket handshake.\n", false, false);
            }
            return;
        case PROTO_HTTP_REQUEST:
            conn_request_done(c);
            answer(c, &c->web->http.req);
            proto_http_next(&c->web->http);
            if (c->web && c->web->awaiting != PROTO_ROUTE_NONE) {
                c->web->close_after = n > 0; /* see struct web_session */
                return;
            }
            break;
        }
    }
}

/* ------------------------------------------------------------------ api --- */

int web_begin(conn *c) {
    c->web = calloc(1, sizeof *c->web);
    if (!c->web) {
        srv_log_client(SRV_LOG_ERROR, "out of memory for an HTTP session of %s",
                       conn_peer(c));
        conn_close(c);
        return -1;
    }
    proto_http_init(&c->web->http);
    return 0;
}

/* ----------------------------------------------------------- transports --- */

static size_t http_input(conn *c, const char *data, size_t n) {
    size_t k = conn_take_share(c, n);
    /* The parser says when a request is complete. */
    if (c->web && c->web->awaiting != PROTO_ROUTE_NONE)
        c->web->close_after |= k > 0; /* see struct web_session */
    else if (c->web)
        http_requests(c, data, k);
    return k;
}

static size_t ws_input(conn *c, const char *data, size_t n) {
    size_t k = conn_take_share(c, n);
    if (c->web && c->web->ws && !proto_ws_feed(c->web->ws, data, k))
        conn_close_after_flush(c);
    return k;
}

static bool http_midway(const conn *c) {
    return c->web && proto_http_midway(&c->web->http);
}

static bool ws_midway(const conn *c) {
    return c->web && c->web->ws && proto_ws_midway(c->web->ws);
}

/* One JSON line (b, ending in '\n') as one WebSocket text message: the frame
 * header and the shared line go out as two buffers of one write. */
static void ws_send(conn *c, srv_buf *b) {
    if (!c->web || !c->web->ws || !proto_ws_open(c->web->ws)) return;
    size_t len = b->len && b->data[b->len - 1] == '\n' ? b->len - 1 : b->len;
    uint8_t hdr[PROTO_WS_HEADER_MAX];
    size_t hdr_len = proto_ws_text_header(hdr, len);
    conn_send_framed(c, hdr, hdr_len, b, len);
}

/* A close frame with code, once; nothing is sent after it. */
static void ws_close(conn *c, uint16_t code) {
    if (c->web && c->web->ws && conn_is_open(c)) proto_ws_close(c->web->ws, code);
}

static void ws_say(conn *c, conn_say why) {
    conn_say_json(c, why, "message", " (WebSocket)");
    if (why == CONN_SAY_SHUTDOWN || why == CONN_SAY_IDLE)
        ws_close(c, PROTO_WS_GOING_AWAY);
    else if (why == CONN_SAY_TOO_LONG)
        ws_close(c, PROTO_WS_TOO_BIG); /* after the error line, before the flush */
}

/* Any close after a flush ends the WebSocket first (if no close went yet). */
static void ws_last_bytes(conn *c) {
    ws_close(c, PROTO_WS_NORMAL);
}

static void web_free(conn *c) {
    if (!c->web) return;
    proto_ws_free(c->web->ws);
    free(c->web);
    c->web = NULL;
}

static int http_begin(conn *c, bool telnet_first) {
    (void)telnet_first;
    return web_begin(c);
}

const conn_transport web_http_transport = {
    .name = "http",
    .begin = http_begin,
    .refuse = web_refuse,
    .turn_share = CONN_TURN_WEB_BYTES,
    .input = http_input,
    .send = conn_send_raw,
    .deliver = http_deliver,
    .midway = http_midway,
    .free = web_free,
    .idle_max_ms = HTTP_KEEPALIVE_MS,
};

const conn_transport web_ws_transport = {
    .name = "ws",
    .turn_share = CONN_TURN_WEB_BYTES,
    .input = ws_input,
    .send = ws_send,
    .deliver = conn_deliver_json,
    .say = ws_say,
    .last_bytes = ws_last_bytes,
    .midway = ws_midway,
    .free = web_free,
};
