/* http.c - HTTP/1.1 requests from bytes (with Debian's http_parser) and responses to
 * bytes; no sockets. */
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

/* ----------------------------------------------------------- detection --- */

int proto_http_detect(const unsigned char *data, size_t n) {
    size_t i = 0;
    while (i < n && i < 16 && data[i] >= 'A' && data[i] <= 'Z')
        i++;
    if (i == n) return -1; /* capitals so far (or nothing) */
    if (i == 0 || i == 16 || data[i] != ' ') return 0;
    if (++i == n) return -1;
    return data[i] == '/' ? 1 : 0;
}

/* ------------------------------------------------------------- parsing --- */

static proto_http *state_of(http_parser *p) {
    return p->data;
}

/* Appends what fits of a piece (http_parser may cut a token anywhere), so the
 * kept prefix is the same however the bytes arrived; flags the rest. */
static void append(char *buf, size_t cap, size_t *len, bool *overflow, const char *at,
                   size_t n) {
    size_t room = cap - 1 - *len;
    if (n > room) {
        *overflow = true;
        n = room;
    }
    memcpy(buf + *len, at, n);
    *len += n;
    buf[*len] = '\0';
}

/* Does a comma-separated header value hold token (case-insensitive)? */
static bool has_token(const char *value, const char *token) {
    size_t tlen = strlen(token);
    const char *p = value;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if ((size_t)(end - start) == tlen && strncasecmp(start, token, tlen) == 0)
            return true;
    }
    return false;
}

/* Headers that a request may carry once only: two of them are a bad request
 * (RFC 7230 5.4 for Host; RFC 6455 11.3.1 and 11.3.5 for the WebSocket key
 * and version), whatever their values. Others are lists: their values add
 * up (RFC 7230 3.2.2). */
static const char *const single_headers[PROTO_HTTP_SINGLE_HEADERS] = {
    "Host", "Sec-WebSocket-Key", "Sec-WebSocket-Version", "Origin"};

/* One header name and value are complete: keep those the server answers on. */
static void header_done(proto_http *h) {
    proto_http_request *r = &h->req;
    for (int i = 0; i < PROTO_HTTP_SINGLE_HEADERS && !h->field_long; i++)
        if (strcasecmp(h->field, single_headers[i]) == 0) {
            if (h->seen_single[i]) h->duplicate = true;
            h->seen_single[i] = true;
        }
    /* An Origin too long to keep is still a browser's: it came, and
     * matches nothing. */
    if (!h->field_long && h->value_long && strcasecmp(h->field, "Origin") == 0)
        r->has_origin = true;
    if (!h->field_long && !h->value_long) {
        /* Whitespace around a value is not part of it (RFC 7230 3.2). */
        while (h->value_len &&
               (h->value[h->value_len - 1] == ' ' || h->value[h->value_len - 1] == '\t'))
            h->value[--h->value_len] = '\0';
        const char *f = h->field, *v = h->value;
        while (*v == ' ' || *v == '\t')
            v++;
        if (strcasecmp(f, "Upgrade") == 0 && has_token(v, "websocket"))
            h->saw_upgrade_ws = true;
        else if (strcasecmp(f, "Connection") == 0 && has_token(v, "upgrade"))
            h->saw_conn_upgrade = true;
        else if (strcasecmp(f, "Sec-WebSocket-Key") == 0 && strlen(v) < sizeof r->ws_key)
            snprintf(r->ws_key, sizeof r->ws_key, "%s", v);
        else if (strcasecmp(f, "Sec-WebSocket-Version") == 0) {
            int version = 0;
            for (; *v >= '0' && *v <= '9' && version < 1000; v++)
                version = version * 10 + (*v - '0');
            r->ws_version = *v == '\0' || *v == ' ' ? version : 0;
        } else if (strcasecmp(f, "Host") == 0) {
            snprintf(r->host, sizeof r->host, "%s", v);
        } else if (strcasecmp(f, "Origin") == 0) {
            r->has_origin = true;
            snprintf(r->origin, sizeof r->origin, "%s", v);
        } else if (strcasecmp(f, "If-None-Match") == 0) {
            /* A list: a second header adds its tags to the first one's. */
            size_t have = strlen(r->if_none_match);
            int n = snprintf(r->if_none_match + have, sizeof r->if_none_match - have,
                             "%s%s", have ? ", " : "", v);
            if (n < 0 || (size_t)n >= sizeof r->if_none_match - have)
                r->if_none_match[have] = '\0'; /* no room: the first tags stay */
        }
    }
    h->field_len = h->value_len = 0;
    h->field[0] = h->value[0] = '\0';
    h->field_long = h->value_long = h->in_value = false;
}

static int on_message_begin(http_parser *p) {
    proto_http *h = state_of(p);
    memset(&h->req, 0, sizeof h->req);
    h->field_len = h->value_len = 0;
    h->field_long = h->value_long = h->in_value = false;
    h->saw_upgrade_ws = h->saw_conn_upgrade = false;
    h->duplicate = false;
    memset(h->seen_single, 0, sizeof h->seen_single);
    h->in_head = true;
    h->in_message = true;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n) {
    proto_http *h = state_of(p);
    size_t len = strlen(h->req.target);
    append(h->req.target, sizeof h->req.target, &len, &h->req.target_truncated, at, n);
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n) {
    proto_http *h = state_of(p);
    if (h->in_value) header_done(h);
    append(h->field, sizeof h->field, &h->field_len, &h->field_long, at, n);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n) {
    proto_http *h = state_of(p);
    h->in_value = true;
    append(h->value, sizeof h->value, &h->value_len, &h->value_long, at, n);
    return 0;
}

static int on_headers_complete(http_parser *p) {
    proto_http *h = state_of(p);
    if (h->in_value) header_done(h);
    h->in_head = false;
    proto_http_request *r = &h->req;
    if (p->http_major != 1) return -1; /* only HTTP/1.x: 400 */
    if (h->duplicate) return -1;       /* 400 */
    r->major = p->http_major;
    r->minor = p->http_minor;
    r->method = p->method == HTTP_GET    ? PROTO_HTTP_GET
                : p->method == HTTP_HEAD ? PROTO_HTTP_HEAD
                                         : PROTO_HTTP_OTHER;
    r->keep_alive = http_should_keep_alive(p) != 0;
    r->upgrade_websocket = h->saw_upgrade_ws && h->saw_conn_upgrade;
    return 0;
}

static int on_message_complete(http_parser *p) {
    proto_http *h = state_of(p);
    h->complete = true;
    h->in_message = false;
    /* One request at a time: pipelined ones wait until this one is answered. */
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

void proto_http_init(proto_http *h) {
    /* Process-wide in http_parser; the same value for every connection. */
    http_parser_set_max_header_size(PROTO_HTTP_HEAD_MAX);
    memset(h, 0, sizeof *h);
    http_parser_init(&h->parser, HTTP_REQUEST);
    h->parser.data = h;
}

bool proto_http_midway(const proto_http *h) {
    return h->in_message;
}

void proto_http_next(proto_http *h) {
    h->complete = false;
    http_parser_pause(&h->parser, 0);
}

proto_http_result proto_http_feed(proto_http *h, const char *data, size_t n,
                                  size_t *consumed) {
    *consumed = 0;
    if (h->complete) return h->parser.upgrade ? PROTO_HTTP_UPGRADE : PROTO_HTTP_REQUEST;
    size_t used = http_parser_execute(&h->parser, &settings, data, n);
    enum http_errno err = HTTP_PARSER_ERRNO(&h->parser);
    *consumed = used;
    if (err == HPE_HEADER_OVERFLOW) return PROTO_HTTP_TOO_LARGE;
    if (err != HPE_OK && err != HPE_PAUSED) return PROTO_HTTP_BAD;
    if (h->complete) return h->parser.upgrade ? PROTO_HTTP_UPGRADE : PROTO_HTTP_REQUEST;
    /* An upgrade request with a body ends its head without completing. */
    if (h->parser.upgrade) return PROTO_HTTP_BAD;
    return PROTO_HTTP_MORE;
}

/* ----------------------------------------------------------- responses --- */

static const char *reason(int status) {
    switch (status) {
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 426:
        return "Upgrade Required";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    default:
        return http_status_str((enum http_status)status);
    }
}

size_t proto_http_head(char *out, size_t cap, int status, const char *content_type,
                       size_t content_length, const char *etag, const char *cache_control,
                       bool keep_alive) {
    char type[128] = "", tag[128] = "", cache[128] = "", allow[32] = "";
    if (content_type) snprintf(type, sizeof type, "Content-Type: %s\r\n", content_type);
    if (etag) snprintf(tag, sizeof tag, "ETag: %s\r\n", etag);
    if (cache_control)
        snprintf(cache, sizeof cache, "Cache-Control: %s\r\n", cache_control);
    if (status == 405) snprintf(allow, sizeof allow, "Allow: GET, HEAD\r\n");
    int len = snprintf(out, cap,
                       "HTTP/1.1 %d %s\r\nServer: race2048d\r\n%s%s%s%s"
                       "Content-Length: %zu\r\nConnection: %s\r\n\r\n",
                       status, reason(status), type, tag, cache, allow, content_length,
                       keep_alive ? "keep-alive" : "close");
    return len < 0 || (size_t)len >= cap ? 0 : (size_t)len;
}

/* ------------------------------------------------------------- origins --- */

/* An origin or a Host value, read for comparison. */
typedef struct authority {
    char scheme[16]; /* lowercase; "" for a Host value */
    char host[256];  /* a name, lowercase (unused for IPv6) */
    bool ipv6;
    unsigned char ip6[16];
    int port; /* -1: none given */
} authority;

/* RFC 3986 reg-name characters (unreserved, pct-encoded, sub-delims). */
static bool name_char(char ch) {
    return isalnum((unsigned char)ch) || strchr("-._~%!$&'()*+,;=", ch) != NULL;
}

/* host[:port] of n bytes into a (its scheme untouched). Returns 0 or -1. */
static int parse_host_port(const char *s, size_t n, authority *a) {
    size_t i = 0;
    a->ipv6 = false;
    a->host[0] = '\0';
    a->port = -1;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        char text[64];
        size_t len = close ? (size_t)(close - s - 1) : 0;
        if (!close || len == 0 || len >= sizeof text) return -1;
        memcpy(text, s + 1, len);
        text[len] = '\0';
        if (inet_pton(AF_INET6, text, a->ip6) != 1) return -1;
        a->ipv6 = true;
        i = len + 2;
    } else {
        while (i < n && s[i] != ':') {
            if (!name_char(s[i]) || i + 1 >= sizeof a->host) return -1;
            a->host[i] = (char)tolower((unsigned char)s[i]);
            i++;
        }
        if (i == 0) return -1;
        a->host[i] = '\0';
    }
    if (i == n) return 0;
    if (s[i] != ':' || i + 1 == n || n - i - 1 > 5) return -1;
    int port = 0;
    for (i++; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        port = port * 10 + (s[i] - '0');
    }
    if (port < 1 || port > 65535) return -1;
    a->port = port;
    return 0;
}

/* scheme://host[:port] of n bytes (nothing after it) into a. Returns 0 or -1. */
static int parse_origin(const char *s, size_t n, authority *a) {
    size_t i = 0;
    while (i < n && i + 1 < sizeof a->scheme &&
           (isalpha((unsigned char)s[i]) ||
            (i && (isdigit((unsigned char)s[i]) || strchr("+-.", s[i]))))) {
        a->scheme[i] = (char)tolower((unsigned char)s[i]);
        i++;
    }
    a->scheme[i] = '\0';
    if (i == 0 || n - i < 3 || memcmp(s + i, "://", 3) != 0) return -1;
    return parse_host_port(s + i + 3, n - i - 3, a);
}

/* The scheme's default port, or -1 if it has none we know. */
static int default_port(const char *scheme) {
    if (!strcmp(scheme, "http") || !strcmp(scheme, "ws")) return 80;
    if (!strcmp(scheme, "https") || !strcmp(scheme, "wss")) return 443;
    return -1;
}

/* The port an origin means: the one given, else its scheme's default. */
static int origin_port(const authority *a) {
    return a->port >= 0 ? a->port : default_port(a->scheme);
}

static bool same_host(const authority *a, const authority *b) {
    if (a->ipv6 != b->ipv6) return false;
    return a->ipv6 ? memcmp(a->ip6, b->ip6, sizeof a->ip6) == 0
                   : strcmp(a->host, b->host) == 0;
}

bool proto_http_same_origin(const char *origin, const char *host) {
    authority o, h;
    if (parse_origin(origin, strlen(origin), &o) < 0) return false;
    if (parse_host_port(host, strlen(host), &h) < 0) return false;
    int port = origin_port(&o);
    if (port < 0 || !same_host(&o, &h)) return false;
    return h.port >= 0 ? h.port == port : port == default_port(o.scheme);
}

/* Calls each(entry, n, ctx) for the entries of a comma-separated list (spaces
 * around them trimmed, one trailing '/' dropped: people write origins as
 * URLs); stops at the first that returns true, and returns true then. */
static bool each_entry(const char *list, bool (*each)(const char *, size_t, void *),
                       void *ctx) {
    const char *p = list;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end - start > 1 && end[-1] == '/' && end[-2] != '/') end--;
        if (each(start, (size_t)(end - start), ctx)) return true;
        if (!*p) return false;
        p++;
    }
}

static bool entry_is(const char *s, size_t n, const char *word) {
    return n == strlen(word) && memcmp(s, word, n) == 0;
}

struct listed_ctx {
    const char *text; /* the origin as sent */
    bool readable;
    authority origin;
};

static bool entry_names(const char *s, size_t n, void *ctx) {
    struct listed_ctx *l = ctx;
    if (entry_is(s, n, "*")) return true;
    if (entry_is(s, n, "null")) return strcmp(l->text, "null") == 0;
    authority a;
    return l->readable && parse_origin(s, n, &a) == 0 &&
           strcmp(a.scheme, l->origin.scheme) == 0 && same_host(&a, &l->origin) &&
           origin_port(&a) == origin_port(&l->origin);
}

bool proto_http_origin_listed(const char *origin, const char *list) {
    struct listed_ctx l = {.text = origin};
    l.readable = parse_origin(origin, strlen(origin), &l.origin) == 0;
    return each_entry(list, entry_names, &l);
}

struct check_ctx {
    char *bad;
    size_t cap;
};

static bool entry_bad(const char *s, size_t n, void *ctx) {
    struct check_ctx *k = ctx;
    authority a;
    if (n &&
        (entry_is(s, n, "*") || entry_is(s, n, "null") || parse_origin(s, n, &a) == 0))
        return false;
    if (k->bad && k->cap) {
        size_t len = n < k->cap - 1 ? n : k->cap - 1;
        memcpy(k->bad, s, len);
        k->bad[len] = '\0';
    }
    return true;
}

int proto_http_origin_list_check(const char *list, char *bad, size_t cap) {
    struct check_ctx k = {bad, cap};
    return each_entry(list, entry_bad, &k) ? -1 : 0;
}

int proto_ws_accept_key(const char *key, char out[29]) {
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    char text[128];
    int len = snprintf(text, sizeof text, "%s%s", key, guid);
    unsigned char md[SHA_DIGEST_LENGTH];
    unsigned int mdlen = 0;
    if (len < 0 || (size_t)len >= sizeof text ||
        !EVP_Digest(text, (size_t)len, md, &mdlen, EVP_sha1(), NULL) ||
        mdlen != SHA_DIGEST_LENGTH)
        return -1;
    /* 20 bytes are 28 base64 characters; EVP_EncodeBlock adds the NUL. */
    return EVP_EncodeBlock((unsigned char *)out, md, SHA_DIGEST_LENGTH) == 28 ? 0 : -1;
}

size_t proto_http_ws_accept_head(char *out, size_t cap, const char *key) {
    char accept[29];
    if (proto_ws_accept_key(key, accept) < 0) return 0;
    int len = snprintf(out, cap,
                       "HTTP/1.1 101 Switching Protocols\r\nServer: race2048d\r\n"
                       "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Accept: %s\r\n\r\n",
                       accept);
    return len < 0 || (size_t)len >= cap ? 0 : (size_t)len;
}

/* ---------------------------------------------------------- game links --- */

/* The id of /game/ID or /api/game/ID from its first character to the end of
 * the path (at '?', '#' or the end): digits only. */
static void route_game_id(const char *id, proto_http_route *out) {
    size_t n = strcspn(id, "?#");
    out->has_game = n > 0 && n <= PROTO_ROUTE_ID_DIGITS && strspn(id, "0123456789") == n;
    out->game = 0;
    for (size_t i = 0; out->has_game && i < n; i++)
        out->game = out->game * 10 + (uint64_t)(id[i] - '0');
}

/* limit= of /api/history's query (the text after '?'): 1 to 100, 20 when
 * absent, 0 when given but not such a number. The last one given counts. */
static int route_limit(const char *query) {
    int limit = 20;
    while (*query && *query != '#') {
        size_t len = strcspn(query, "&#");
        if (len >= 6 && strncmp(query, "limit=", 6) == 0) {
            const char *v = query + 6;
            size_t digits = len - 6;
            limit = 0;
            if (digits >= 1 && digits <= 3 && strspn(v, "0123456789") >= digits) {
                int x = 0;
                for (size_t i = 0; i < digits; i++)
                    x = x * 10 + (v[i] - '0');
                limit = x >= 1 && x <= 100 ? x : 0;
            }
        }
        query += len;
        if (*query == '&') query++;
    }
    return limit;
}

/* The code of /api/arena/CODE (to the end of the path), upper-cased; "" if
 * it is not 4 to 8 letters or digits. */
static void route_arena_code(const char *code, proto_http_route *out) {
    size_t n = strcspn(code, "?#");
    out->arena[0] = '\0';
    if (n < 4 || n > PROTO_ROUTE_ARENA_MAX) return;
    for (size_t i = 0; i < n; i++) {
        char ch = code[i];
        if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))) {
            out->arena[0] = '\0';
            return;
        }
        out->arena[i] = ch;
    }
    out->arena[n] = '\0';
}

proto_http_route proto_http_route_of(const char *target) {
    proto_http_route r = {.kind = PROTO_ROUTE_NONE};
    size_t path_len = strcspn(target, "?#");
    static const char game[] = "/game/", api_game[] = "/api/game/",
                      history[] = "/api/history", arenas[] = "/api/arenas",
                      arena[] = "/api/arena/";
    if (path_len > strlen(game) && strncmp(target, game, strlen(game)) == 0 &&
        !memchr(target + strlen(game), '/', path_len - strlen(game))) {
        r.kind = PROTO_ROUTE_GAME_PAGE;
        route_game_id(target + strlen(game), &r);
    } else if (path_len > strlen(api_game) &&
               strncmp(target, api_game, strlen(api_game)) == 0 &&
               !memchr(target + strlen(api_game), '/', path_len - strlen(api_game))) {
        r.kind = PROTO_ROUTE_API_GAME;
        route_game_id(target + strlen(api_game), &r);
    } else if (path_len == strlen(history) && strncmp(target, history, path_len) == 0) {
        r.kind = PROTO_ROUTE_API_HISTORY;
        r.limit = target[path_len] == '?' ? route_limit(target + path_len + 1) : 20;
    } else if (path_len == strlen(arenas) && strncmp(target, arenas, path_len) == 0) {
        r.kind = PROTO_ROUTE_API_ARENAS;
    } else if (path_len > strlen(arena) && strncmp(target, arena, strlen(arena)) == 0 &&
               !memchr(target + strlen(arena), '/', path_len - strlen(arena))) {
        r.kind = PROTO_ROUTE_API_ARENA;
        route_arena_code(target + strlen(arena), &r);
    }
    return r;
}
