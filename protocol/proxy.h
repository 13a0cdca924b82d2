/* proxy.h - the PROXY protocol header (HAProxy's versions 1 and 2) from bytes, taken
 * incrementally; no sockets. */
#ifndef RACE2048_PROXY_H
#define RACE2048_PROXY_H

#include <stddef.h>
#include <stdint.h>

/* A version 1 line is at most 107 bytes with its CRLF; version 2 keeps its
 * 16 fixed bytes and the first 36 of its address block (IPv6 and ports). */
#define PROTO_PROXY_V1_MAX 107
/* Version 2's 12-byte signature, which no text or JSON or HTTP client sends. */
#define PROTO_PROXY_V2_SIG     "\r\n\r\n\0\r\nQUIT\n"
#define PROTO_PROXY_V2_SIG_LEN 12

typedef enum proto_proxy_status {
    PROTO_PROXY_MORE,    /* every byte was taken; the header is not complete yet */
    PROTO_PROXY_DONE,    /* the header ended: *used bytes of this call's were its last */
    PROTO_PROXY_INVALID, /* not a valid header: the connection must be closed */
} proto_proxy_status;

/* What the header says the client is. */
typedef enum proto_proxy_kind {
    /* Version 2 LOCAL: the balancer's own connection (a health check); the
     * connection's own address stands. */
    PROTO_PROXY_LOCAL,
    /* Version 1 UNKNOWN, or a version 2 PROXY of a family without an IP
     * address (AF_UNSPEC, AF_UNIX, or an unspecified transport): valid, and
     * the connection's own address stands, as the protocol says. */
    PROTO_PROXY_UNKNOWN,
    PROTO_PROXY_IPV4, /* source address: 4 bytes, network order */
    PROTO_PROXY_IPV6, /* source address: 16 bytes, network order */
} proto_proxy_kind;

typedef struct proto_proxy_source {
    proto_proxy_kind kind;
    uint8_t version;        /* 1 or 2 */
    unsigned char addr[16]; /* IPV4: the first 4 bytes; IPV6: all 16 */
    uint16_t port;          /* the client's port (0 for LOCAL and UNKNOWN) */
} proto_proxy_source;

/* A header being read: zero it (proto_proxy_init) before the first byte. It
 * holds at most PROTO_PROXY_V1_MAX + 1 bytes of the header, however long the
 * header is (version 2's TLVs, up to 64 KiB, are counted and skipped). */
typedef struct proto_proxy {
    uint32_t taken; /* header bytes taken so far */
    uint32_t total; /* version 2: its whole length, once the 16 fixed bytes are in */
    uint8_t kept;   /* bytes of head in use */
    unsigned char head[PROTO_PROXY_V1_MAX + 1];
} proto_proxy;

void proto_proxy_init(proto_proxy *p);

/* Takes the next n bytes of a connection that must begin with a header.
 * MORE: all n were taken, the header goes on. DONE: the first *used of them
 * ended the header (the rest are the client's own first bytes) and *out says
 * who the client is. INVALID: the bytes so far cannot begin a valid header
 * (said as soon as they cannot: a wrong first byte is INVALID at once); *out
 * and *used are unspecified. After DONE or INVALID, p must be initialised
 * again before another call. n may be 0. */
proto_proxy_status proto_proxy_feed(proto_proxy *p, const void *data, size_t n,
                                    size_t *used, proto_proxy_source *out);

#endif
