/* ws.c - a WebSocket server endpoint (RFC 6455, with wslay) driven from byte buffers:
 * text messages in, control frames out, data frame headers; no sockets. */
#include "ws.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <wslay/wslay.h>

struct proto_ws {
    wslay_event_context_ptr ctx;
    proto_ws_handlers handlers;
    void *owner;
    size_t max_msg;
    uint64_t msg_len;    /* payload bytes of the message being received so far */
    unsigned msg_frames; /* its frames so far */
    const char *in;      /* the bytes being fed, for the recv callback */
    size_t in_len;
    bool stopped;  /* reads nothing more: a close went out */
    bool in_frame; /* a frame's header came, its end has not */
    bool msg_open; /* a fragmented message has begun, its last frame not ended */
    bool dirty;    /* bytes came since the last frame ended */
    uint16_t code; /* the close code we sent */
};

/* ------------------------------------------------------ wslay callbacks --- */

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
                       void *user) {
    proto_ws *ws = user;
    if (ws->stopped || ws->in_len == 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t n = len < ws->in_len ? len : ws->in_len;
    memcpy(buf, ws->in, n);
    ws->in += n;
    ws->in_len -= n;
    return (ssize_t)n;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
                       int flags, void *user) {
    proto_ws *ws = user;
    ws->handlers.on_output(ws->owner, (const char *)data, len);
    return (ssize_t)len;
}

static void stop(proto_ws *ws, uint16_t code) {
    if (ws->stopped) return;
    ws->stopped = true;
    if (wslay_event_queue_close(ws->ctx, code, NULL, 0) == 0) ws->code = code;
}

/* Sizes and kinds are judged at each frame's start, before its payload is
 * buffered: an oversized or binary message costs no memory. */
static void on_frame_start(wslay_event_context_ptr ctx,
                           const struct wslay_event_on_frame_recv_start_arg *arg,
                           void *user) {
    proto_ws *ws = user;
    ws->in_frame = true;
    if (arg->opcode < WSLAY_CONNECTION_CLOSE) ws->msg_open = !arg->fin;
    /* wslay would answer a one-byte close body (no code) with an empty close. */
    if (arg->opcode == WSLAY_CONNECTION_CLOSE && arg->payload_length == 1)
        stop(ws, PROTO_WS_PROTOCOL);
    if (ws->stopped || arg->opcode >= WSLAY_CONNECTION_CLOSE) return; /* control */
    if (arg->opcode == WSLAY_BINARY_FRAME) {
        stop(ws, PROTO_WS_UNSUPPORTED);
        return;
    }
    if (arg->opcode == WSLAY_TEXT_FRAME) ws->msg_len = ws->msg_frames = 0;
    ws->msg_len += arg->payload_length;
    if (arg->payload_length > ws->max_msg || ws->msg_len > ws->max_msg) {
        ws->handlers.on_too_long(ws->owner);
        stop(ws, PROTO_WS_TOO_BIG);
    } else if (++ws->msg_frames > PROTO_WS_FRAGMENTS_MAX) {
        /* wslay keeps each fragment apart: tiny ones would cost the server
         * far more memory than the client spent bytes. */
        stop(ws, PROTO_WS_POLICY);
    }
}

static void on_frame_end(wslay_event_context_ptr ctx, void *user) {
    proto_ws *ws = user;
    ws->in_frame = false;
    ws->dirty = false;
}

static void on_msg(wslay_event_context_ptr ctx,
                   const struct wslay_event_on_msg_recv_arg *arg, void *user) {
    proto_ws *ws = user;
    if (ws->stopped) return;
    if (arg->opcode == WSLAY_TEXT_FRAME && arg->msg_length > 0)
        ws->handlers.on_text(ws->owner, (const char *)arg->msg, arg->msg_length);
    else if (arg->opcode == WSLAY_CONNECTION_CLOSE)
        ws->stopped = true; /* wslay answers it with the same code */
}

/* ----------------------------------------------------------------- api --- */

proto_ws *proto_ws_new(size_t max_msg, const proto_ws_handlers *handlers, void *owner) {
    proto_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    static const struct wslay_event_callbacks callbacks = {
        .recv_callback = on_recv,
        .send_callback = on_send,
        .on_frame_recv_start_callback = on_frame_start,
        .on_frame_recv_end_callback = on_frame_end,
        .on_msg_recv_callback = on_msg,
    };
    if (wslay_event_context_server_init(&ws->ctx, &callbacks, ws) != 0) {
        free(ws);
        return NULL;
    }
    ws->handlers = *handlers;
    ws->owner = owner;
    ws->max_msg = max_msg;
    /* No wslay limit: it would close with 1009 before on_frame_start could
     * send line_too_long; on_frame_start enforces max_msg instead. */
    return ws;
}

void proto_ws_free(proto_ws *ws) {
    if (!ws) return;
    wslay_event_context_free(ws->ctx);
    free(ws);
}

static bool flush(proto_ws *ws) {
    if (wslay_event_send(ws->ctx) != 0) ws->stopped = true;
    if (wslay_event_get_close_sent(ws->ctx)) {
        ws->stopped = true;
        if (!ws->code) ws->code = wslay_event_get_status_code_sent(ws->ctx);
    }
    return !ws->stopped;
}

bool proto_ws_feed(proto_ws *ws, const char *data, size_t n) {
    if (ws->stopped) return false;
    ws->in = data;
    ws->in_len = n;
    if (n) ws->dirty = true;
    int rc = wslay_event_recv(ws->ctx);
    ws->in = NULL;
    ws->in_len = 0;
    if (rc != 0) stop(ws, PROTO_WS_PROTOCOL);
    return flush(ws);
}

void proto_ws_close(proto_ws *ws, uint16_t code) {
    if (wslay_event_get_close_sent(ws->ctx)) return;
    ws->stopped = false; /* let stop() queue it even after the client's close */
    stop(ws, code);
    flush(ws);
}

bool proto_ws_open(const proto_ws *ws) {
    return !ws->stopped && !wslay_event_get_close_sent(ws->ctx);
}

bool proto_ws_midway(const proto_ws *ws) {
    return ws->in_frame || ws->msg_open || ws->dirty;
}

uint16_t proto_ws_close_code(const proto_ws *ws) {
    return ws->code;
}

size_t proto_ws_text_header(uint8_t out[PROTO_WS_HEADER_MAX], uint64_t len) {
    out[0] = 0x80 | WSLAY_TEXT_FRAME; /* FIN, text */
    if (len < 126) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len <= 0xFFFF) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (int i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    return 10;
}
