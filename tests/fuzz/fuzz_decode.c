/* fuzz_decode.c - libFuzzer target: any bytes as one line into proto_decode, and as an
 * end whose seed a client reads, checking their invariants. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "seed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fails loudly so that libFuzzer records the input. */
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) abort();                                                            \
    } while (0)

static bool is_upper_alnum(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Encodes s and parses it back: an encoder line is always one compact JSON
 * object with the right type that ends in a single '\n'. */
static void check_line(char *line, size_t len, const char *type) {
    CHECK(line != NULL);
    CHECK(len > 0 && line[len - 1] == '\n' && strlen(line) == len);
    CHECK(memchr(line, '\n', len - 1) == NULL);
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    CHECK(o != NULL && json_is_object(o));
    CHECK(strcmp(json_string_value(json_object_get(o, "type")), type) == 0);
    json_decref(o);
    free(line);
}

/* The fields the decoder promises for the request's type. */
static void check_request(const proto_request *req) {
    const proto_settings *st = &req->settings;
    switch (req->type) {
    case PROTO_REQ_HELLO:
        CHECK(proto_valid_name(req->name));
        break;
    case PROTO_REQ_SOLO:
    case PROTO_REQ_CREATE:
    case PROTO_REQ_QUICK:
        CHECK(st->size >= ENG_SIZE_MIN && st->size <= ENG_SIZE_MAX);
        CHECK(st->target >= 8 && st->target <= PROTO_TARGET_MAX);
        CHECK((st->target & (st->target - 1)) == 0);
        CHECK(st->time_limit <= PROTO_TIME_LIMIT_MAX);
        if (req->type != PROTO_REQ_SOLO)
            CHECK(st->players >= PROTO_PLAYERS_MIN && st->players <= PROTO_PLAYERS_MAX);
        if (req->type != PROTO_REQ_CREATE) CHECK(st->time_limit == 0);
        if (req->type != PROTO_REQ_SOLO) CHECK(!req->has_seed);
        break;
    case PROTO_REQ_JOIN:
    case PROTO_REQ_WATCH: {
        size_t n = strlen(req->room);
        CHECK(n >= PROTO_ROOM_MIN && n <= PROTO_ROOM_MAX);
        for (size_t i = 0; i < n; i++)
            CHECK(is_upper_alnum(req->room[i]));
        break;
    }
    case PROTO_REQ_MOVE:
        CHECK(req->dir == ENG_LEFT || req->dir == ENG_RIGHT || req->dir == ENG_UP ||
              req->dir == ENG_DOWN);
        CHECK(!req->has_seq || req->seq <= PROTO_SEQ_MAX);
        break;
    case PROTO_REQ_RESUME: {
        size_t n = strlen(req->token);
        CHECK(n >= 1 && n <= PROTO_TOKEN_MAX);
        for (size_t i = 0; i < n; i++)
            CHECK(req->token[i] >= 0x20 && req->token[i] < 0x7F);
        break;
    }
    case PROTO_REQ_PING:
    case PROTO_REQ_LEAVE:
    case PROTO_REQ_ROOMS:
    case PROTO_REQ_REMATCH:
        break;
    case PROTO_REQ_HISTORY:
        CHECK(req->limit >= 1 && req->limit <= 100);
        break;
    case PROTO_REQ_REPLAY:
    case PROTO_REQ_REGISTER:
        break;
    case PROTO_REQ_LEADERBOARD:
        CHECK(req->limit >= 1 && req->limit <= 100);
        break;
    case PROTO_REQ_PROFILE:
        CHECK(proto_valid_name(req->name));
        break;
    case PROTO_REQ_DAILY:
        CHECK(st->size >= ENG_SIZE_MIN && st->size <= ENG_SIZE_MAX && st->target == 2048);
        break;
    case PROTO_REQ_ARENA_CREATE: {
        size_t n = strlen(req->arena_name);
        CHECK(n >= 1 && n <= PROTO_ARENA_NAME_MAX);
        for (size_t i = 0; i < n; i++)
            CHECK(req->arena_name[i] >= 0x20 && req->arena_name[i] < 0x7F);
        CHECK(req->minutes >= PROTO_ARENA_MINUTES_MIN &&
              req->minutes <= PROTO_ARENA_MINUTES_MAX);
        CHECK(req->starts_in >= 0 && req->starts_in <= PROTO_ARENA_STARTS_MAX);
        CHECK(st->players >= PROTO_PLAYERS_MIN && st->players <= PROTO_PLAYERS_MAX);
        CHECK(st->size >= ENG_SIZE_MIN && st->size <= ENG_SIZE_MAX);
        CHECK(st->target >= 8 && st->target <= PROTO_TARGET_MAX);
        CHECK((st->target & (st->target - 1)) == 0);
        break;
    }
    case PROTO_REQ_ARENAS:
        break;
    case PROTO_REQ_ARENA_JOIN:
    case PROTO_REQ_ARENA_LEAVE:
    case PROTO_REQ_ARENA_RESULTS: {
        /* The code is read into room, upper-cased, like join's. */
        size_t n = strlen(req->room);
        CHECK(n >= PROTO_ROOM_MIN && n <= PROTO_ROOM_MAX);
        for (size_t i = 0; i < n; i++)
            CHECK(is_upper_alnum(req->room[i]));
        break;
    }
    default:
        CHECK(0);
    }
    if (req->type != PROTO_REQ_PING) CHECK(req->ping_t == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* A copy of exactly `size` bytes, so ASan catches any read past the line. */
    char *line = malloc(size ? size : 1);
    if (!line) return 0;
    if (size) memcpy(line, data, size);

    proto_request req;
    proto_error err;
    memset(&err, 0xAA, sizeof err);
    int rc = proto_decode(line, size, &req, &err);
    CHECK(rc == 0 || rc == -1);
    size_t len;
    if (rc == 0) {
        check_request(&req);
        if (req.type == PROTO_REQ_PING)
            check_line(proto_enc_pong(req.ping_t, &len), len, "pong");
        if (req.type == PROTO_REQ_HELLO)
            check_line(proto_enc_welcome(1, req.name, "t", &len), len, "welcome");
        if (req.type == PROTO_REQ_JOIN || req.type == PROTO_REQ_WATCH)
            check_line(proto_enc_player(req.room, 1, true, PROTO_PLAYING, &len), len,
                       "player");
        proto_request_clear(&req);
        CHECK(req.ping_t == NULL);
    } else {
        CHECK(err.code == PROTO_ERR_BAD_JSON || err.code == PROTO_ERR_BAD_MESSAGE ||
              err.code == PROTO_ERR_UNKNOWN_TYPE || err.code == PROTO_ERR_BAD_DIR);
        CHECK(memchr(err.message, '\0', sizeof err.message) != NULL);
        CHECK(err.message[0] != '\0');
        CHECK(req.ping_t == NULL);
        if (err.code == PROTO_ERR_BAD_MESSAGE || err.code == PROTO_ERR_BAD_DIR)
            CHECK(req.type <= PROTO_REQ_NONE);
        /* The message must go out as it is: valid UTF-8, so encoded unchanged. */
        char *out = proto_enc_error(err.code, err.message, &len);
        CHECK(out != NULL);
        json_t *o = json_loadb(out, len, 0, NULL);
        CHECK(o != NULL);
        CHECK(strcmp(json_string_value(json_object_get(o, "message")), err.message) == 0);
        json_decref(o);
        check_line(out, len, "error");
    }
    /* A client reads end.seed from whatever a server sends: the same bytes
     * as an end's seed must parse only to a seed that writes back the same. */
    json_t *any = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    json_t *v = json_is_object(any) ? json_object_get(any, "seed") : any;
    eng_seed seed;
    if (v && proto_seed_from_json(v, &seed) == 0) {
        json_t *back = proto_seed_json(&seed);
        CHECK(back != NULL && json_equal(back, v));
        json_decref(back);
    }
    json_decref(any);
    free(line);
    return 0;
}
