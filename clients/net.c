/* net.c - a tiny line client over POSIX sockets: connect, queue, flush, read lines;
 * and the number parsing of its programs' options. */
#include "net.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One read asks for this much; a few of them per net_read() call. */
#define NET_READ_CHUNK     (64 * 1024)
#define NET_READS_PER_CALL 4

const char *net_strerror(int rc) {
    static char buf[160];
    switch (rc) {
    case NET_OK:
        return "ok";
    case NET_AGAIN:
        return "timed out";
    case NET_ERR_RESOLVE:
        return "cannot resolve host or port";
    case NET_ERR_CONNECT:
        snprintf(buf, sizeof buf, "cannot connect: %s", strerror(errno));
        return buf;
    case NET_ERR_IO:
        snprintf(buf, sizeof buf, "socket error: %s", strerror(errno));
        return buf;
    case NET_ERR_NOMEM:
        return "out of memory";
    case NET_ERR_LINE_LONG:
        return "the server sent an over-long line";
    case NET_ERR_CLOSED:
        return "the server closed the connection";
    }
    return "unknown error";
}

int net_connect(net_conn *c, const char *host, const char *port) {
    memset(c, 0, sizeof *c);
    c->fd = -1;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res) return NET_ERR_RESOLVE;
    int saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            c->fd = fd;
            break;
        }
        saved = errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (c->fd < 0) {
        errno = saved;
        return NET_ERR_CONNECT;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int flags = fcntl(c->fd, F_GETFL);
    if (flags < 0 || fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        saved = errno;
        close(c->fd);
        c->fd = -1;
        errno = saved;
        return NET_ERR_CONNECT;
    }
    return NET_OK;
}

void net_close(net_conn *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    byte_buf_free(&c->in);
    byte_buf_free(&c->out);
    c->in_off = c->out_off = 0;
}

/* Makes room for `more` bytes after b's len, first sliding out the *off
 * bytes already consumed. Returns 0, or -1 with the bytes unchanged. */
static int grow(byte_buf *b, size_t *off, size_t more) {
    assert(*off <= b->len);
    if (*off > 0 && *off == b->len) {
        *off = b->len = 0;
    } else if (*off > 0 && more > (size_t)(b->cap - b->len)) {
        memmove(b->data, b->data + *off, b->len - *off);
        b->len -= (uint32_t)*off;
        *off = 0;
    }
    /* A first block of 4 KiB: a queue's first lines are small. */
    return byte_buf_reserve(b, !b->cap && more < 4096 ? 4096 : more);
}

int net_queue(net_conn *c, const char *data, size_t len) {
    if (grow(&c->out, &c->out_off, len) < 0) return NET_ERR_NOMEM;
    if (byte_buf_append(&c->out, data, len) < 0)
        return NET_ERR_NOMEM; /* cannot: room made */
    return NET_OK;
}

int net_flush(net_conn *c) {
    while (c->out_off < c->out.len) {
        /* send() with MSG_NOSIGNAL: a peer that went away is an error to
         * report, not a SIGPIPE that kills the whole program. */
        ssize_t n =
            send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return NET_AGAIN;
            return NET_ERR_IO;
        }
        c->out_off += (size_t)n;
    }
    c->out_off = c->out.len = 0;
    return NET_OK;
}

int net_read(net_conn *c) {
    int got = 0;
    for (int i = 0; i < NET_READS_PER_CALL; i++) {
        if (grow(&c->in, &c->in_off, NET_READ_CHUNK) < 0) return NET_ERR_NOMEM;
        ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == ECONNRESET) {
                c->eof = true;
                return NET_ERR_CLOSED;
            }
            return NET_ERR_IO;
        }
        if (n == 0) {
            c->eof = true;
            return NET_ERR_CLOSED;
        }
        c->in.len += (uint32_t)n;
        c->rx_bytes += (size_t)n;
        got = 1;
        if ((size_t)n < NET_READ_CHUNK) break; /* drained: skip a read that would fail */
    }
    return got ? NET_OK : NET_AGAIN;
}

int net_next_line(net_conn *c, char **line, size_t *len) {
    for (;;) {
        if (!c->in.data) return NET_AGAIN;
        char *start = c->in.data + c->in_off;
        size_t avail = c->in.len - c->in_off;
        char *nl = avail ? memchr(start, '\n', avail) : NULL;
        if (!nl) return avail > NET_LINE_MAX ? NET_ERR_LINE_LONG : NET_AGAIN;
        size_t n = (size_t)(nl - start);
        c->in_off += n + 1;
        if (n > 0 && start[n - 1] == '\r') n--;
        if (n == 0) continue;
        if (n > NET_LINE_MAX) return NET_ERR_LINE_LONG;
        start[n] = '\0';
        *line = start;
        *len = n;
        return NET_OK;
    }
}

int net_wait_line(net_conn *c, int timeout_ms, char **line, size_t *len) {
    for (;;) {
        int rc = net_next_line(c, line, len);
        if (rc != NET_AGAIN) return rc;
        if (c->eof) return NET_ERR_CLOSED;
        rc = net_flush(c);
        if (rc < 0) return rc;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (rc == NET_AGAIN) p.events |= POLLOUT;
        int n = poll(&p, 1, timeout_ms);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return NET_ERR_IO;
        if (n == 0) return NET_AGAIN;
        if (p.revents & (POLLIN | POLLERR | POLLHUP)) {
            rc = net_read(c);
            if (rc < 0 && rc != NET_ERR_CLOSED) return rc;
        }
    }
}

int net_flush_all(net_conn *c, int timeout_ms) {
    for (;;) {
        int rc = net_flush(c);
        if (rc != NET_AGAIN) return rc;
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        int n = poll(&p, 1, timeout_ms);
        if (n < 0 && errno != EINTR) return NET_ERR_IO;
        if (n == 0) return NET_AGAIN;
    }
}
