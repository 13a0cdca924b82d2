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
    /* The frame reader ahead of wslay (see scan): the header being read, how
     * many of its bytes came, and the payload bytes still to pass. */
    uint8_t hdr[14];
    unsigned hdr_have;
    uint64_t frame_len;    /* its payload length, once known */
    uint64_t payload_left; /* of the last whole header's frame */
    bool stopped;          /* reads nothing more: a close went out */
    bool msg_open;         /* a fragmented message has begun, its last frame not ended */
    uint16_t code;         /* the close code we sent */
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

static void on_msg(wslay_event_context_ptr ctx,
                   const struct wslay_event_on_msg_recv_arg *arg, void *user) {
    proto_ws *ws = user;
    if (ws->stopped) return;
    if (arg->opcode == WSLAY_TEXT_FRAME && arg->msg_length > 0)
        ws->handlers.on_text(ws->owner, (const char *)arg->msg, arg->msg_length);
    else if (arg->opcode == WSLAY_CONNECTION_CLOSE)
        ws->stopped = true; /* wslay answers it with the same code */
}

/* ---------------------------------------------------------- frame reader --- */

/* wslay reports a frame only once a byte of its payload has come, and answers
 * some violations (a fragmented or oversized control frame, a length with its
 * top bit set) with a close that has no status. So every frame header is read
 * here first, as the bytes pass: a header that breaks a rule closes the
 * connection as soon as its length is known, with the code RFC 6455 gives, and
 * wslay never sees it. */

/* Opcodes (RFC 6455 5.2). */
enum { OP_CONT = 0, OP_TEXT = 1, OP_BINARY = 2, OP_CLOSE = 8, OP_PING = 9, OP_PONG = 10 };

/* Judges the first two bytes of a header; returns a close code, 0 if fine. */
static uint16_t judge_start(const proto_ws *ws, uint8_t b0, uint8_t b1) {
    unsigned opcode = b0 & 0x0f, len7 = b1 & 0x7f;
    bool fin = b0 & 0x80, control = opcode & 0x08;
    if (b0 & 0x70) return PROTO_WS_PROTOCOL; /* RSV bits: no extension agreed */
    if (opcode != OP_CONT && opcode != OP_TEXT && opcode != OP_BINARY &&
        opcode != OP_CLOSE && opcode != OP_PING && opcode != OP_PONG)
        return PROTO_WS_PROTOCOL;               /* reserved opcode */
    if (!(b1 & 0x80)) return PROTO_WS_PROTOCOL; /* clients must mask (5.1) */
    /* Control frames are never fragmented and carry at most 125 bytes (5.5);
     * a close body of one byte is no status code (5.5.1). */
    if (control && (!fin || len7 > 125 || (opcode == OP_CLOSE && len7 == 1)))
        return PROTO_WS_PROTOCOL;
    if (opcode == OP_CONT && !ws->msg_open) return PROTO_WS_PROTOCOL;
    if ((opcode == OP_TEXT || opcode == OP_BINARY) && ws->msg_open)
        return PROTO_WS_PROTOCOL; /* a new message inside another */
    if (opcode == OP_BINARY) return PROTO_WS_UNSUPPORTED;
    return 0;
}

/* Judges a data frame whose payload length is now known, and counts it in
 * its message; returns a close code, 0 if fine. */
static uint16_t judge_length(proto_ws *ws, uint8_t b0, unsigned len7, uint64_t len) {
    unsigned opcode = b0 & 0x0f;
    /* The length in the fewest bytes, and a 64-bit one with its top bit clear
     * (5.2). */
    if ((len7 == 126 && len < 126) || (len7 == 127 && (len <= 0xFFFF || len >> 63)))
        return PROTO_WS_PROTOCOL;
    if (opcode & 0x08) return 0; /* control: never part of a message */
    ws->msg_open = !(b0 & 0x80);
    if (opcode == OP_TEXT) ws->msg_len = ws->msg_frames = 0;
    /* Checked before it is added: max_msg plus any length fits 64 bits. */
    if (len > ws->max_msg || ws->msg_len + len > ws->max_msg) return PROTO_WS_TOO_BIG;
    ws->msg_len += len;
    /* wslay keeps each fragment apart: tiny ones would cost the server far
     * more memory than the client spent bytes. */
    if (++ws->msg_frames > PROTO_WS_FRAGMENTS_MAX) return PROTO_WS_POLICY;
    return 0;
}

/* Reads the frame headers in n bytes. Returns 0 if they all keep the rules,
 * else the close code for the first that breaks one, with *ok set to the
 * bytes before that header (the ones wslay may still have). Cannot fail. */
static uint16_t scan(proto_ws *ws, const uint8_t *p, size_t n, size_t *ok) {
    size_t i = 0, header_at = 0;
    while (i < n) {
        if (ws->payload_left) {
            uint64_t skip = ws->payload_left < n - i ? ws->payload_left : n - i;
            ws->payload_left -= skip;
            i += (size_t)skip;
            continue;
        }
        if (ws->hdr_have == 0) header_at = i;
        ws->hdr[ws->hdr_have++] = p[i++];
        if (ws->hdr_have < 2) continue;
        uint8_t b0 = ws->hdr[0], b1 = ws->hdr[1];
        unsigned len7 = b1 & 0x7f;
        unsigned ext = len7 == 127 ? 8 : len7 == 126 ? 2 : 0;
        uint16_t code = 0;
        if (ws->hdr_have == 2) code = judge_start(ws, b0, b1);
        if (!code && ws->hdr_have == 2 + ext) {
            uint64_t len = ext ? 0 : len7;
            for (unsigned k = 0; k < ext; k++)
                len = len << 8 | ws->hdr[2 + k];
            code = judge_length(ws, b0, len7, len);
            ws->frame_len = len;
        }
        if (code) {
            *ok = header_at;
            return code;
        }
        if (ws->hdr_have == 2 + ext + 4) { /* the mask key came: the header is whole */
            ws->hdr_have = 0;
            ws->payload_left = ws->frame_len;
        }
    }
    return 0;
}

/* ----------------------------------------------------------------- api --- */

proto_ws *proto_ws_new(size_t max_msg, const proto_ws_handlers *handlers, void *owner) {
    proto_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    static const struct wslay_event_callbacks callbacks = {
        .recv_callback = on_recv,
        .send_callback = on_send,
        .on_msg_recv_callback = on_msg,
    };
    if (wslay_event_context_server_init(&ws->ctx, &callbacks, ws) != 0) {
        free(ws);
        return NULL;
    }
    ws->handlers = *handlers;
    ws->owner = owner;
    ws->max_msg = max_msg;
    /* No wslay limit: it would close with 1009 before line_too_long went
     * out; scan() enforces max_msg instead. */
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
    size_t ok = n;
    uint16_t code = scan(ws, (const uint8_t *)data, n, &ok);
    if (ok) {
        ws->in = data;
        ws->in_len = ok;
        int rc = wslay_event_recv(ws->ctx);
        ws->in = NULL;
        ws->in_len = 0;
        if (rc != 0) stop(ws, PROTO_WS_PROTOCOL);
    }
    /* The frames before the bad header are handled (a close among them wins). */
    if (code && !ws->stopped) {
        if (code == PROTO_WS_TOO_BIG) ws->handlers.on_too_long(ws->owner);
        stop(ws, code);
    }
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
    return ws->hdr_have || ws->payload_left || ws->msg_open;
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
