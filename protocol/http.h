/* http.h - HTTP/1.1 requests from bytes (with Debian's http_parser) and responses to
 * bytes; no sockets. */
#ifndef RACE2048_HTTP_H
#define RACE2048_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>

/* Request line plus headers may take at most this many bytes; beyond it the
 * request is answered 431 and the connection closed. */
#define PROTO_HTTP_HEAD_MAX 8192
/* Headers a request may hold only once (Host, Sec-WebSocket-Key,
 * Sec-WebSocket-Version, Origin): a second one is PROTO_HTTP_BAD. */
#define PROTO_HTTP_SINGLE_HEADERS 4
/* Room for a Host or Origin value: a scheme, a 253-byte DNS name or a
 * bracketed IPv6 address, a port, and the NUL. A longer one is kept as
 * "given but unreadable" (it matches nothing). */
#define PROTO_HTTP_AUTHORITY_MAX 280
/* Targets longer than this are kept truncated and flagged (they 404). */
#define PROTO_HTTP_TARGET_MAX 256

typedef enum proto_http_method {
    PROTO_HTTP_GET,
    PROTO_HTTP_HEAD,
    PROTO_HTTP_OTHER, /* any other method: 405 */
} proto_http_method;

/* One parsed request: only what the server answers on. */
typedef struct proto_http_request {
    proto_http_method method;
    char target[PROTO_HTTP_TARGET_MAX + 1]; /* path and query, NUL-terminated */
    bool target_truncated;
    int major, minor; /* HTTP version */
    bool keep_alive;  /* the client wants the connection kept after this one */
    /* WebSocket opening handshake (RFC 6455 4.2.1): Upgrade: websocket and
     * Connection: upgrade were both present. */
    bool upgrade_websocket;
    char ws_key[64];        /* Sec-WebSocket-Key, trimmed; empty if absent or too long */
    int ws_version;         /* Sec-WebSocket-Version, 0 if absent or not a number */
    char if_none_match[80]; /* for ETag revalidation; empty if absent */
    /* Host and Origin as sent, trimmed; "" if absent or too long (see
     * PROTO_HTTP_AUTHORITY_MAX). has_origin: an Origin header came (a
     * browser's request), readable or not. */
    char host[PROTO_HTTP_AUTHORITY_MAX];
    char origin[PROTO_HTTP_AUTHORITY_MAX];
    bool has_origin;
} proto_http_request;

/* The parser state of one connection; no allocation, fixed size. */
typedef struct proto_http {
    http_parser parser;
    proto_http_request req; /* being filled; complete when feed says so */
    size_t head_bytes;      /* bytes of this request's head consumed so far */
    bool in_head;           /* inside request line or headers */
    bool in_message;        /* a request has begun and not completed */
    bool complete;          /* on_message_complete ran for req */
    /* The header being read; http_parser may hand name and value in pieces. */
    char field[32];
    size_t field_len;
    bool field_long; /* name longer than field: not one we look at */
    char value[PROTO_HTTP_AUTHORITY_MAX];
    size_t value_len;
    bool value_long;
    bool in_value;
    bool saw_upgrade_ws;                         /* Upgrade: websocket */
    bool saw_conn_upgrade;                       /* Connection: ... upgrade ... */
    bool seen_single[PROTO_HTTP_SINGLE_HEADERS]; /* which of them came */
    bool duplicate; /* one of those came twice: a bad request */
} proto_http;

typedef enum proto_http_result {
    PROTO_HTTP_MORE,      /* everything consumed; the request is not complete */
    PROTO_HTTP_REQUEST,   /* a whole request (body skipped) is in h->req */
    PROTO_HTTP_UPGRADE,   /* a request with Upgrade ended its head: in h->req;
                             the bytes after it belong to the new protocol */
    PROTO_HTTP_BAD,       /* not HTTP/1.x, malformed, or a header that must come
                             once came twice: answer 400 and close */
    PROTO_HTTP_TOO_LARGE, /* head over PROTO_HTTP_HEAD_MAX: answer 431 and close */
} proto_http_result;

/* Starts (or restarts, after a request) a connection's parser. Cannot fail. */
void proto_http_init(proto_http *h);

/* Feeds n bytes. *consumed says how many were used: on REQUEST and UPGRADE
 * the bytes after the request are not consumed (pipelined requests or
 * WebSocket frames: feed them again after proto_http_next() or the switch);
 * on MORE all of them. After BAD or TOO_LARGE the parser is dead. */
proto_http_result proto_http_feed(proto_http *h, const char *data, size_t n,
                                  size_t *consumed);

/* Is a request half received (begun, not complete)? For the server's
 * request timeout. Cannot fail. */
bool proto_http_midway(const proto_http *h);

/* Gets ready for the next request on a kept-alive connection. */
void proto_http_next(proto_http *h);

/* Is this the start of an HTTP request line? Looks at the first bytes a
 * client sent: 1 yes (capital letters, a space, '/'), 0 no, -1 cannot tell
 * yet (a prefix of such a line). Cannot fail. */
int proto_http_detect(const unsigned char *data, size_t n);

/* Writes a response head into out (cap bytes): status line with the
 * standard reason phrase, Content-Type (if not NULL), Content-Length, ETag
 * (if not NULL), Cache-Control (if not NULL), Connection: keep-alive or
 * close, then the blank line. Returns its length, or 0 if it does not fit. */
size_t proto_http_head(char *out, size_t cap, int status, const char *content_type,
                       size_t content_length, const char *etag, const char *cache_control,
                       bool keep_alive);

/* Writes the 101 Switching Protocols answer for a WebSocket key into out.
 * Returns its length, or 0 if it does not fit or hashing fails. */
size_t proto_http_ws_accept_head(char *out, size_t cap, const char *key);

/* ------------------------------------------------------------- origins ---
 *
 * A browser names the page that opens a WebSocket in Origin
 * (scheme://host[:port], RFC 6454) and the server it asks in Host
 * (host[:port]). Hosts compare case-insensitively, IPv6 addresses by value
 * (brackets and spelling aside); a missing port is the scheme's default (80
 * for http and ws, 443 for https and wss). */

/* Is origin (an Origin value) the server named by host (a Host value)? True
 * if the host names are equal and the ports too: host's port if it has one
 * equals the origin's (explicit or its scheme's default); a host without one
 * matches an origin on its scheme's default port (the Host header leaves out
 * the default port of whichever scheme the page used: a balancer in front
 * may have ended TLS). False if either cannot be read (e.g. "null", a path,
 * userinfo, ""). */
bool proto_http_same_origin(const char *origin, const char *host);

/* Does list (comma-separated origins, spaces around commas allowed; "*"
 * stands for any origin, "null" for the opaque origin browsers send from
 * sandboxed pages and files) name origin? Origins compare by scheme
 * (case-insensitive), host and port, the default port spelt or not. */
bool proto_http_origin_listed(const char *origin, const char *list);

/* Is list a valid --allow-origin value (every entry an origin, "*" or
 * "null", none empty)? Returns 0, or -1 with the first bad entry copied into
 * bad (cap bytes, truncated) if bad is not NULL. */
int proto_http_origin_list_check(const char *list, char *bad, size_t cap);

/* Sec-WebSocket-Accept for a key: base64(SHA-1(key + GUID)), 28 characters
 * and a NUL. Returns 0, or -1 if OpenSSL fails. */
int proto_ws_accept_key(const char *key, char out[29]);

/* ---------------------------------------------------------- game links ---
 *
 * Version 4: the routes that read the record. /game/ID is the web client
 * opened on a finished game; /api/game/ID and /api/history answer the JSON of
 * the `replay` and `history` requests. */

typedef enum proto_http_route_kind {
    PROTO_ROUTE_NONE,        /* none of these (an asset, /ws, ..., or a 404) */
    PROTO_ROUTE_GAME_PAGE,   /* /game/ID */
    PROTO_ROUTE_API_GAME,    /* /api/game/ID */
    PROTO_ROUTE_API_HISTORY, /* /api/history[?limit=N] */
    PROTO_ROUTE_API_ARENAS,  /* /api/arenas */
    PROTO_ROUTE_API_ARENA,   /* /api/arena/CODE */
} proto_http_route_kind;

/* An arena's code in /api/arena/CODE: at most this many characters. */
#define PROTO_ROUTE_ARENA_MAX 8

/* Games ids in a path: decimal digits, at most this many (below 2^63, as
 * JSON integers are read). */
#define PROTO_ROUTE_ID_DIGITS 18

typedef struct proto_http_route {
    proto_http_route_kind kind;
    /* GAME_PAGE, API_GAME: the id could be one of this server's (decimal
     * digits); false for anything else, which names no game (404). */
    bool has_game;
    uint64_t game;
    /* API_HISTORY: 1 to 100 (20 without limit=); 0 for a bad limit= value. */
    int limit;
    /* API_ARENA: the code upper-cased, if it is 4 to 8 letters or digits;
     * "" for anything else, which names no arena (404). */
    char arena[PROTO_ROUTE_ARENA_MAX + 1];
} proto_http_route;

/* Which of the routes above target (a request target, path and query) asks
 * for. Cannot fail: an unknown path is PROTO_ROUTE_NONE. */
proto_http_route proto_http_route_of(const char *target);

#endif
