/* fuzz_record.c - libFuzzer target: the journal format's readers (protocol/record.h)
 * take any line without crashing, and what they read is written the same way twice. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fails loudly so that libFuzzer records the input. */
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) abort();                                                            \
    } while (0)

/* A writer's line, read back by its reader and written again, is the same
 * bytes: after one round the format is a fixed point. */
#define STABLE(type, dec, put)                                                           \
    do {                                                                                 \
        type a, c;                                                                       \
        byte_buf x = {0}, y = {0};                                                       \
        if (dec(line, size, &a) == 0 && put(&x, &a) == 0) {                              \
            CHECK(dec(x.data, x.len, &c) == 0);                                          \
            CHECK(put(&y, &c) == 0);                                                     \
            CHECK(x.len == y.len && !memcmp(x.data, y.data, x.len));                     \
        }                                                                                \
        byte_buf_free(&x);                                                               \
        byte_buf_free(&y);                                                               \
    } while (0)

static int put_moves(byte_buf *b, const char *line, size_t len) {
    uint64_t game;
    proto_moves_part parts[PROTO_PLAYERS_MAX];
    int n;
    char *owned;
    if (proto_dec_moves_record(line, len, &game, parts, &n, &owned) < 0) return -1;
    for (int i = 0; i < n; i++)
        CHECK(parts[i].n == 0 || parts[i].letters);
    int rc = proto_rec_put_moves(b, game, parts, n);
    free(owned);
    return rc;
}

static int put_seat(byte_buf *b, const char *line, size_t len) {
    uint64_t game, id;
    char event[16];
    if (proto_dec_seat_record(line, len, &game, &id, event) < 0) return -1;
    return proto_rec_put_seat(b, game, id, event);
}

static int put_head(byte_buf *b, const char *line, size_t len) {
    uint64_t next_game, next_id;
    if (proto_dec_head_record(line, len, &next_game, &next_id) < 0) return -1;
    return proto_rec_put_head(b, next_game, next_id, 0);
}

/* The same for the readers that return their fields one by one. */
static void stable_fn(int (*put)(byte_buf *, const char *, size_t), const char *line,
                      size_t size) {
    byte_buf x = {0}, y = {0};
    if (put(&x, line, size) == 0) {
        CHECK(put(&y, x.data, x.len) == 0);
        CHECK(x.len == y.len && !memcmp(x.data, y.data, x.len));
    }
    byte_buf_free(&x);
    byte_buf_free(&y);
}

static int enc_game(byte_buf *b, const proto_game_record *g) {
    size_t len;
    char *line = proto_enc_game_record(g, &len);
    if (!line) return -1;
    int rc = byte_buf_append(b, line, len);
    free(line);
    return rc;
}

static int dec_game(const char *line, size_t len, proto_game_record *g) {
    static proto_game_record last[2];
    static int k;
    /* Records own their letters: the previous one of this slot is freed. */
    proto_game_record_clear(&last[k]);
    int rc = proto_dec_game_record(line, len, g);
    if (rc == 0)
        last[k] = *g;
    else
        last[k] = (proto_game_record){0};
    k ^= 1;
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *line = (const char *)data;
    uint64_t game, ids[PROTO_PLAYERS_MAX];
    int n;
    proto_rec_kind kind = proto_rec_kind_of(line, size, &game);
    proto_rec_kind parsed = proto_rec_kind_parse(line, size, &game);
    CHECK(kind == PROTO_REC_OTHER || parsed == kind);
    if (proto_scan_start_ids(line, size, &game, ids, &n) == 0)
        CHECK(n >= 0 && n <= PROTO_PLAYERS_MAX);
    (void)proto_rec_game_played(line, size);
    (void)proto_rec_is(line, size, "daily");
    STABLE(proto_start_record, proto_dec_start_record, proto_rec_put_start);
    STABLE(proto_daily_record, proto_dec_daily_record, proto_rec_put_daily);
    STABLE(proto_daily_entry_record, proto_dec_daily_entry_record,
           proto_rec_put_daily_entry);
    STABLE(proto_game_record, dec_game, enc_game);
    stable_fn(put_moves, line, size);
    stable_fn(put_seat, line, size);
    stable_fn(put_head, line, size);
    return 0;
}
