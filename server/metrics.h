/* metrics.h - the server's counters in the Prometheus text format (0.0.4). */
#ifndef RACE2048_METRICS_H
#define RACE2048_METRICS_H

#include "srv.h"

/* Writes the exposition of s into a new buffer. Returns NULL if memory runs out. */
srv_buf *metrics_render(srv *s);

#endif
