/* wsclient.h - a test client for race2048d's HTTP and WebSocket side, over the
 * harness's raw sockets. Fails the running test on any surprise, like the harness. */
#ifndef RACE2048_TESTS_WSCLIENT_H
#define RACE2048_TESTS_WSCLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "harness.h"

/* One HTTP response, as read: status, headers (raw, for strstr) and body. */
typedef struct http_response {
    int status;
    char head[2048];
    char *body; /* malloc'd, NUL-terminated; freed by http_response_free */
    size_t body_len;
} http_response;

/* Reads one response from c (a HEAD request has no body: pass head_only). */
void http_read(client *c, http_response *r, bool head_only, int ms);
void http_response_free(http_response *r);
/* The value of header name in r (case-insensitive), copied into out; false if absent. */
bool http_header(const http_response *r, const char *name, char *out, size_t cap);
/* GET target of s's /api/ as JSON (its Content-Type checked): *status the HTTP
 * status, the body parsed (kept until teardown). */
json_t *http_api_get(th_server *s, const char *target, int *status);

/* A connection that has done the WebSocket handshake on /ws (101 checked). */
client *ws_connect(th_server *s);
client *ws_connect_rcvbuf(th_server *s, int rcvbuf);
/* The same on another port of s (its --http-port). */
client *ws_connect_port(th_server *s, int port);
/* Sends one frame; masked unless unmasked. */
void ws_send_frame(client *c, bool fin, int opcode, const void *payload, size_t len,
                   bool unmasked);
/* Sends a JSON request as one text message (printf format). */
void ws_send(client *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Reads one frame: returns its opcode (-1 on EOF), its payload in buf
 * (NUL-terminated; cap must leave room). Checks that server frames are final
 * and unmasked. */
int ws_read_frame(client *c, char *buf, size_t cap, size_t *len, int ms);
/* The next text message as JSON (compact, with a string type; kept until
 * teardown); NULL if a close frame or EOF comes instead. Pongs are skipped. */
json_t *ws_next(client *c, int ms);
json_t *ws_expect(client *c, const char *type, int ms);
json_t *ws_expect_skip(client *c, const char *type, const char *skip, int ms);
/* The next frame must be a close; returns its status code (0 if none). */
int ws_expect_close(client *c, int ms);

#endif
