/* net.h - a tiny line client over POSIX sockets, shared by the bot and the load
 * generator. */
#ifndef RACE2048_NET_H
#define RACE2048_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "byte_buf.h"

/* The longest server line a client accepts. A server line can be long (an
 * `end` of eight players on 8x8 boards), so this is far above the 4096 the
 * server accepts from us; it only stops a broken peer from eating memory. */
#define NET_LINE_MAX (1u << 20)

/* One connection: a socket and the bytes waiting on either side of it. Both
 * buffers (byte_buf, the one growable buffer) grow on demand and never
 * shrink, so a busy connection stops allocating after its first few lines. */
typedef struct net_conn {
    int fd;          /* the socket, -1 when closed */
    byte_buf in;     /* received bytes; those from in_off on are not yet lines */
    size_t in_off;   /* start of the first unreturned byte in `in` */
    byte_buf out;    /* queued bytes; those from out_off on are not yet written */
    size_t out_off;  /* bytes of `out` already written */
    size_t rx_bytes; /* every byte ever received, for throughput figures */
    bool eof;        /* the peer closed its side (or reset the connection) */
} net_conn;

/* Results of the calls below; 0 is success, every failure is negative. */
enum {
    NET_OK = 0,
    NET_AGAIN = 1,          /* nothing more now: try again after poll() */
    NET_ERR_RESOLVE = -1,   /* the host or port did not resolve */
    NET_ERR_CONNECT = -2,   /* connect() failed: errno says why */
    NET_ERR_IO = -3,        /* read() or write() failed: errno says why */
    NET_ERR_NOMEM = -4,     /* a buffer could not grow */
    NET_ERR_LINE_LONG = -5, /* the peer sent a line over NET_LINE_MAX */
    NET_ERR_CLOSED = -6,    /* the peer closed the connection */
};

/* Text for a NET_ result; for CONNECT and IO it includes strerror(errno),
 * so call it before anything else touches errno. */
const char *net_strerror(int rc);

/* Connects c to host:port over TCP (blocking connect: on loopback it takes
 * microseconds), then makes the socket non-blocking with TCP_NODELAY (moves
 * are tiny and latency-bound). Returns NET_OK, or NET_ERR_RESOLVE /
 * NET_ERR_CONNECT with c->fd -1 and nothing allocated. */
int net_connect(net_conn *c, const char *host, const char *port);

/* Closes the socket and frees both buffers. Safe on a closed or zeroed conn,
 * and twice. */
void net_close(net_conn *c);

/* Queues len bytes for sending (nothing is written yet: see net_flush).
 * Returns NET_OK, or NET_ERR_NOMEM with the queue unchanged. */
int net_queue(net_conn *c, const char *data, size_t len);

/* Writes as much of the queue as the socket takes without blocking. Returns
 * NET_OK when the queue is empty, NET_AGAIN when bytes remain (wait for
 * POLLOUT), or NET_ERR_IO (the connection is broken; the queue is kept). */
int net_flush(net_conn *c);

/* True while queued bytes wait to be written. */
static inline bool net_want_write(const net_conn *c) {
    return c->out_off < c->out.len;
}

/* Reads what the socket has without blocking (up to a few reads of 64 KiB,
 * so one busy connection cannot starve the others of a poll loop). Returns
 * NET_OK if bytes arrived, NET_AGAIN if none were there, NET_ERR_CLOSED on
 * EOF or a reset (c->eof set; bytes read before it stay readable as lines),
 * NET_ERR_IO or NET_ERR_NOMEM. */
int net_read(net_conn *c);

/* Pops the next complete line (the '\n' and a '\r' before it removed, empty
 * lines skipped) into *line / *len. The line is NUL-terminated in place and
 * valid until the next net_read() or net_next_line() on c. Returns NET_OK,
 * NET_AGAIN when no complete line is buffered, or NET_ERR_LINE_LONG when the
 * buffered partial line is already over NET_LINE_MAX. */
int net_next_line(net_conn *c, char **line, size_t *len);

/* Blocking helper for simple clients: the next line, waiting up to
 * timeout_ms (-1 = forever) and flushing the queue meanwhile. Returns
 * NET_OK, NET_AGAIN on timeout, or an error as above (NET_ERR_CLOSED when
 * the peer closes before a complete line). */
int net_wait_line(net_conn *c, int timeout_ms, char **line, size_t *len);

/* Blocking helper: flushes the whole queue, waiting up to timeout_ms per
 * stalled write (-1 = forever). Returns NET_OK, NET_AGAIN on timeout, or
 * NET_ERR_IO. */
int net_flush_all(net_conn *c, int timeout_ms);

#endif
