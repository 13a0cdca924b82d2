/* fuzz_proxy.c - libFuzzer target: the PROXY protocol parser, fed in input-chosen chunks,
 * gives the same outcome however the bytes are cut. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fails loudly so that libFuzzer records the input. */
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) abort();                                                            \
    } while (0)

typedef struct outcome {
    proto_proxy_status status;
    size_t used;
    proto_proxy_source src;
} outcome;

/* Feeds data whole, or in chunks whose sizes come from a second stream of
 * the input (1..64 bytes each). */
static outcome run(const uint8_t *data, size_t size, const uint8_t *cuts, size_t ncuts) {
    proto_proxy p;
    proto_proxy_init(&p);
    outcome o = {.status = PROTO_PROXY_MORE};
    size_t off = 0, cut = 0;
    do {
        size_t k = size - off;
        if (ncuts) {
            size_t want = (size_t)(cuts[cut++ % ncuts] % 64) + 1;
            if (want < k) k = want;
        }
        size_t used = (size_t)-1;
        o.status = proto_proxy_feed(&p, data + off, k, &used, &o.src);
        if (o.status != PROTO_PROXY_INVALID) CHECK(used <= k);
        if (o.status == PROTO_PROXY_MORE) CHECK(used == k);
        if (o.status == PROTO_PROXY_DONE) {
            CHECK(used > 0);
            CHECK(o.src.version == 1 || o.src.version == 2);
            CHECK(o.src.kind <= PROTO_PROXY_IPV6);
        }
        o.used = off + used;
        off += k;
    } while (o.status == PROTO_PROXY_MORE && off < size);
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* The first byte says where the cut stream begins (from the end). */
    if (size < 1) return 0;
    size_t ncuts = data[0] % 16;
    if (ncuts > size - 1) ncuts = size - 1;
    const uint8_t *cuts = data + size - ncuts;
    const uint8_t *body = data + 1;
    size_t n = size - 1 - ncuts;
    outcome whole = run(body, n, NULL, 0);
    outcome cut = run(body, n, cuts, ncuts);
    CHECK(whole.status == cut.status);
    if (whole.status == PROTO_PROXY_DONE) {
        CHECK(whole.used == cut.used);
        CHECK(whole.src.kind == cut.src.kind && whole.src.port == cut.src.port);
        CHECK(!memcmp(whole.src.addr, cut.src.addr, sizeof whole.src.addr));
        /* Version 1 is a line of at most 107 bytes; version 2 is its length. */
        if (whole.src.version == 1) CHECK(whole.used <= PROTO_PROXY_V1_MAX);
    }
    return 0;
}
