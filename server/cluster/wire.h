/* wire.h - what the nodes of a cluster tell each other about players: requests, room
 * views and messages, as JSON values (jansson).
 *
 * Nodes run the same build and trust each other (NATS is the host's own
 * network), but a value read here is checked as if it came from a client:
 * every bound a struct has is enforced, so a corrupt or foreign message is
 * refused (-1 or NULL), never a crash. Times in views are sent as
 * milliseconds from now, since each node's loop clock is its own. */
#ifndef RACE2048_WIRE_H
#define RACE2048_WIRE_H

#include <jansson.h>

#include "base.h"
#include "view.h"

/* A request (every field of its type; a ping's value is not sent: pings
 * are answered where they arrive). NULL if memory runs out. */
json_t *wire_request(const proto_request *req);
/* Reads a request back into *out (zeroed first). Returns 0 or -1. */
int wire_request_parse(const json_t *v, proto_request *out);

/* A view, its loop times relative to now_ms. NULL if memory runs out. */
json_t *wire_view(const srv_view *v, uint64_t now_ms);
/* A new view (one reference) read back, its times made absolute from
 * now_ms; NULL if v is not a view or memory runs out. */
srv_view *wire_view_parse(const json_t *v, uint64_t now_ms);

/* A message without its recipients: type, line, view and the fields the
 * transports read. History, replay and rooms rows are not sent (those
 * requests are answered on the node that holds the connection). */
json_t *wire_msg(const srv_msg *m, uint64_t now_ms);
/* Reads a message back into *out. out->json and out->view are new
 * references (srv_buf_unref / srv_view_unref them); out->text points into
 * text (cap bytes). Returns 0 or -1 (nothing to release then). */
int wire_msg_parse(const json_t *v, uint64_t now_ms, srv_msg *out, char *text,
                   size_t cap);

#endif
