/* metrics.h - the server's counters in the Prometheus text format (0.0.4). */
#ifndef RACE2048_METRICS_H
#define RACE2048_METRICS_H

#include "srv.h"

/* The exposition of s, as a buffer the caller must unref. Rendering walks every
 * connection and room, so requests in one loop turn share one rendering: a
 * client pipelining `GET /metrics` costs one walk a turn, not one a request.
 * Returns NULL if memory runs out. */
srv_buf *metrics_render(srv *s);
/* Drops the rendering kept for the current turn (server exit). */
void metrics_free(srv *s);

#endif
