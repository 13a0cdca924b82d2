/* ws.h - a WebSocket server endpoint (RFC 6455, with wslay) driven from byte buffers:
 * text messages in, control frames out, data frame headers; no sockets. */
#ifndef RACE2048_WS_H
#define RACE2048_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Close status codes the server sends (RFC 6455 7.4.1). */
#define PROTO_WS_NORMAL      1000
#define PROTO_WS_GOING_AWAY  1001
#define PROTO_WS_PROTOCOL    1002
#define PROTO_WS_UNSUPPORTED 1003
#define PROTO_WS_POLICY      1008
#define PROTO_WS_TOO_BIG     1009

/* A message in more fragments than this is closed with 1008. */
#define PROTO_WS_FRAGMENTS_MAX 64

/* A data frame header is at most this long (server frames are not masked). */
#define PROTO_WS_HEADER_MAX 10

typedef struct proto_ws proto_ws;

/* What an endpoint tells its owner; ctx is the pointer given to new. */
typedef struct proto_ws_handlers {
    /* One whole text message (fragments reassembled), never empty. */
    void (*on_text)(void *ctx, const char *msg, size_t len);
    /* A message passed max_msg: send the client an error now; the endpoint
     * then sends a close with 1009 and reads nothing more. */
    void (*on_too_long)(void *ctx);
    /* Bytes the endpoint wants on the wire (pongs, close frames), in order. */
    void (*on_output)(void *ctx, const char *data, size_t len);
} proto_ws_handlers;

/* A new endpoint accepting messages up to max_msg bytes. Returns NULL if
 * memory runs out. */
proto_ws *proto_ws_new(size_t max_msg, const proto_ws_handlers *handlers, void *ctx);
void proto_ws_free(proto_ws *ws);

/* Feeds bytes from the client; handlers run during the call. Returns true
 * while the connection stays open, false once a close frame went out (the
 * client's close answered, or a protocol error, binary message, oversized
 * message or failure closed it): flush the output, then close the socket. */
bool proto_ws_feed(proto_ws *ws, const char *data, size_t n);

/* Sends a close frame with code (server-initiated close). No data frame may
 * follow it. Ignored if a close already went out. */
void proto_ws_close(proto_ws *ws, uint16_t code);

/* May data frames still be sent (no close frame sent yet)? */
bool proto_ws_open(const proto_ws *ws);

/* Is a frame or a fragmented message half received? For the server's
 * request timeout: bytes that never make a whole message. Cannot fail. */
bool proto_ws_midway(const proto_ws *ws);

/* The close code the endpoint sent, 0 if none. */
uint16_t proto_ws_close_code(const proto_ws *ws);

/* Writes the header of one unmasked final text frame carrying len bytes.
 * Returns its length (2, 4 or 10). Cannot fail. */
size_t proto_ws_text_header(uint8_t out[PROTO_WS_HEADER_MAX], uint64_t len);

#endif
