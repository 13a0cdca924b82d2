/* message.c - JSON request lines to validated proto_requests, and server messages to JSON
 * lines. */
#include "message.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byte_buf.h"
#include "seed.h"

/* ---------------------------------------------------------------- names --- */

const char *proto_err_code(proto_err err) {
    switch (err) {
    case PROTO_OK:
        return "ok";
    case PROTO_ERR_BAD_JSON:
        return "bad_json";
    case PROTO_ERR_BAD_MESSAGE:
        return "bad_message";
    case PROTO_ERR_UNKNOWN_TYPE:
        return "unknown_type";
    case PROTO_ERR_BAD_DIR:
        return "bad_dir";
    case PROTO_ERR_NOT_PLAYING:
        return "not_playing";
    case PROTO_ERR_ROOM_NOT_FOUND:
        return "room_not_found";
    case PROTO_ERR_ALREADY_STARTED:
        return "already_started";
    case PROTO_ERR_BUSY:
        return "busy";
    case PROTO_ERR_LINE_TOO_LONG:
        return "line_too_long";
    case PROTO_ERR_BAD_TOKEN:
        return "bad_token";
    case PROTO_ERR_SERVER_FULL:
        return "server_full";
    case PROTO_ERR_SLOW_CONSUMER:
        return "slow_consumer";
    case PROTO_ERR_GAME_NOT_FOUND:
        return "game_not_found";
    case PROTO_ERR_RATE_LIMITED:
        return "rate_limited";
    case PROTO_ERR_ROOM_FULL:
        return "room_full";
    case PROTO_ERR_UNAVAILABLE:
        return "unavailable";
    case PROTO_ERR_NAME_TAKEN:
        return "name_taken";
    case PROTO_ERR_BAD_KEY:
        return "bad_key";
    case PROTO_ERR_ACCOUNT_NEEDED:
        return "account_needed";
    case PROTO_ERR_PLAYER_NOT_FOUND:
        return "player_not_found";
    case PROTO_ERR_DAILY_PLAYED:
        return "daily_played";
    case PROTO_ERR_ARENA_NOT_FOUND:
        return "arena_not_found";
    case PROTO_ERR_ARENA_OVER:
        return "arena_over";
    }
    return "unknown";
}

char proto_dir_letter(eng_dir dir) {
    return "lrud"[dir & 3];
}

int proto_dir_from_letter(char letter, eng_dir *dir) {
    static const eng_dir dirs[] = {ENG_LEFT, ENG_RIGHT, ENG_UP, ENG_DOWN};
    for (int i = 0; i < 4; i++) {
        if ("lrud"[i] == letter) {
            *dir = dirs[i];
            return 0;
        }
    }
    return -1;
}

const char *proto_status_name(proto_status status) {
    switch (status) {
    case PROTO_PLAYING:
        return "playing";
    case PROTO_WON:
        return "won";
    case PROTO_OVER:
        return "over";
    case PROTO_LEFT:
        return "left";
    }
    return "unknown";
}

const char *proto_dir_name(eng_dir dir) {
    switch (dir) {
    case ENG_LEFT:
        return "left";
    case ENG_RIGHT:
        return "right";
    case ENG_UP:
        return "up";
    case ENG_DOWN:
        return "down";
    }
    return "unknown";
}

/* The client types, indexed by proto_req_type. */
static const char *const req_names[] = {
    [PROTO_REQ_HELLO] = "hello",
    [PROTO_REQ_SOLO] = "solo",
    [PROTO_REQ_CREATE] = "create",
    [PROTO_REQ_JOIN] = "join",
    [PROTO_REQ_QUICK] = "quick",
    [PROTO_REQ_WATCH] = "watch",
    [PROTO_REQ_MOVE] = "move",
    [PROTO_REQ_LEAVE] = "leave",
    [PROTO_REQ_RESUME] = "resume",
    [PROTO_REQ_ROOMS] = "rooms",
    [PROTO_REQ_PING] = "ping",
    [PROTO_REQ_REMATCH] = "rematch",
    [PROTO_REQ_HISTORY] = "history",
    [PROTO_REQ_REPLAY] = "replay",
    [PROTO_REQ_REGISTER] = "register",
    [PROTO_REQ_LEADERBOARD] = "leaderboard",
    [PROTO_REQ_PROFILE] = "profile",
    [PROTO_REQ_DAILY] = "daily",
    [PROTO_REQ_ARENA_CREATE] = "arena_create",
    [PROTO_REQ_ARENAS] = "arenas",
    [PROTO_REQ_ARENA_JOIN] = "arena_join",
    [PROTO_REQ_ARENA_LEAVE] = "arena_leave",
    [PROTO_REQ_ARENA_RESULTS] = "arena_results",
};
#define REQ_COUNT ((int)(sizeof req_names / sizeof req_names[0]))

/* ------------------------------------------------------- error messages --- */

/* Cuts a UTF-8 sequence that truncation left incomplete at the end of s, so
 * that a message cut short is still valid UTF-8 for the encoder. */
static void utf8_trim_tail(char *s) {
    size_t n = strlen(s), i = n;
    while (i > 0 && n - i < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0) return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t want = lead < 0x80    ? 1
                  : lead >= 0xF0 ? 4
                  : lead >= 0xE0 ? 3
                  : lead >= 0xC0 ? 2
                                 : 1;
    if (i - 1 + want > n) s[i - 1] = '\0';
}

/* Fills *err and returns -1, so that checks can `return fail(...)`. */
static int fail(proto_error *err, proto_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(proto_error *err, proto_err code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    if (n < 0) snprintf(err->message, sizeof err->message, "%s", proto_err_code(code));
    utf8_trim_tail(err->message);
    err->code = code;
    return -1;
}

/* Copies at most QUOTE_MAX bytes of a client's string s (len bytes, valid
 * UTF-8, may hold NULs) into out for quoting in a message: control
 * characters become '?', a long string is cut on a character boundary and
 * ends in "...". out must hold QUOTE_MAX + 4 bytes. */
#define QUOTE_MAX 32
static void quote_client(char *out, const char *s, size_t len) {
    size_t o = 0, i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        size_t seq = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (o + seq > QUOTE_MAX || i + seq > len) break;
        if (seq == 1) {
            out[o++] = (c < 0x20 || c == 0x7F) ? '?' : (char)c;
        } else {
            memcpy(out + o, s + i, seq);
            o += seq;
        }
        i += seq;
    }
    if (i < len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* Reports a jansson parse error: its text with anything not printable ASCII
 * made '?' (its "near" part quotes raw client bytes), then the column,
 * keeping the column even when the text has to be cut. */
static int fail_json(proto_error *err, const json_error_t *je) {
    char where[32], text[sizeof err->message];
    snprintf(where, sizeof where, " at column %d", je->column);
    const char *prefix = "line is not valid JSON: ";
    size_t room = sizeof err->message - strlen(prefix) - strlen(where) - 1;
    size_t n = 0;
    for (; je->text[n] && n < room && n < sizeof je->text; n++) {
        unsigned char c = (unsigned char)je->text[n];
        text[n] = (c < 0x20 || c > 0x7E) ? '?' : (char)c;
    }
    text[n] = '\0';
    return fail(err, PROTO_ERR_BAD_JSON, "%s%s%s", prefix, text, where);
}

/* --------------------------------------------------------------- fields --- */

/* Reads an optional integer field into *out: absent leaves *out alone and
 * returns 0 with *present false; a JSON integer in lo..hi is stored; anything
 * else (a real, a string, a bool, null, out of range) is bad_message. */
static int opt_int(const json_t *root, const char *key, json_int_t lo, json_int_t hi,
                   json_int_t *out, bool *present, proto_error *err) {
    const json_t *v = json_object_get(root, key);
    if (present) *present = v != NULL;
    if (!v) return 0;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x >= lo && x <= hi) {
            *out = x;
            return 0;
        }
    }
    return fail(err, PROTO_ERR_BAD_MESSAGE, "%s must be an integer from %lld to %lld",
                key, (long long)lo, (long long)hi);
}

static int opt_players(const json_t *root, int *players, proto_error *err) {
    json_int_t x = *players;
    if (opt_int(root, "players", PROTO_PLAYERS_MIN, PROTO_PLAYERS_MAX, &x, NULL, err))
        return -1;
    *players = (int)x;
    return 0;
}

static int opt_size(const json_t *root, int *size, proto_error *err) {
    json_int_t x = *size;
    if (opt_int(root, "size", ENG_SIZE_MIN, ENG_SIZE_MAX, &x, NULL, err)) return -1;
    *size = (int)x;
    return 0;
}

static int opt_target(const json_t *root, uint32_t *target, proto_error *err) {
    const json_t *v = json_object_get(root, "target");
    if (!v) return 0;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x >= 8 && x <= (json_int_t)PROTO_TARGET_MAX && (x & (x - 1)) == 0) {
            *target = (uint32_t)x;
            return 0;
        }
    }
    return fail(err, PROTO_ERR_BAD_MESSAGE, "target must be a power of two from 8 to %lu",
                (unsigned long)PROTO_TARGET_MAX);
}

static int opt_time_limit(const json_t *root, uint32_t *time_limit, proto_error *err) {
    json_int_t x = *time_limit;
    if (opt_int(root, "time_limit", 0, PROTO_TIME_LIMIT_MAX, &x, NULL, err)) return -1;
    *time_limit = (uint32_t)x;
    return 0;
}

/* Finds a required string field: missing is bad_message "missing field",
 * any other JSON type is bad_message with `expected`. */
static int req_string(const json_t *root, const char *key, const char *expected,
                      const char **s, size_t *len, proto_error *err) {
    const json_t *v = json_object_get(root, key);
    if (!v) return fail(err, PROTO_ERR_BAD_MESSAGE, "missing field \"%s\"", key);
    if (!json_is_string(v)) return fail(err, PROTO_ERR_BAD_MESSAGE, "%s", expected);
    *s = json_string_value(v);
    *len = json_string_length(v);
    return 0;
}

static bool name_char(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

static bool alnum_char(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Checks a name of len bytes; a NUL inside (from \u0000) fails the set. */
static bool valid_name_n(const char *s, size_t len) {
    if (len < 1 || len > PROTO_NAME_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char((unsigned char)s[i])) return false;
    return true;
}

bool proto_valid_name(const char *name) {
    return name && valid_name_n(name, strnlen(name, PROTO_NAME_MAX + 1));
}

#define NAME_EXPECTED  "name must be a string of 1 to 16 characters from A-Z a-z 0-9 _ -"
#define ROOM_EXPECTED  "room must be a string of 4 to 8 letters and digits"
#define TOKEN_EXPECTED "token must be a string of 1 to 64 printable ASCII characters"
#define DIR_EXPECTED   "dir must be one of up, down, left, right"
#define KEY_EXPECTED   "key must be a string (the 32 hex digits `registered` gave)"

static int get_name(const json_t *root, proto_request *req, proto_error *err) {
    const char *s = NULL;
    size_t len = 0;
    if (req_string(root, "name", NAME_EXPECTED, &s, &len, err)) return -1;
    if (!valid_name_n(s, len)) return fail(err, PROTO_ERR_BAD_MESSAGE, NAME_EXPECTED);
    memcpy(req->name, s, len);
    req->name[len] = '\0';
    return 0;
}

/* Room codes are case-insensitive on input; the server's codes are upper. */
static int get_code(const json_t *root, const char *key, const char *expected,
                    proto_request *req, proto_error *err) {
    const char *s = NULL;
    size_t len = 0;
    if (req_string(root, key, expected, &s, &len, err)) return -1;
    if (len < PROTO_ROOM_MIN || len > PROTO_ROOM_MAX)
        return fail(err, PROTO_ERR_BAD_MESSAGE, "%s", expected);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!alnum_char(c)) return fail(err, PROTO_ERR_BAD_MESSAGE, "%s", expected);
        req->room[i] = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    }
    req->room[len] = '\0';
    return 0;
}

static int get_room(const json_t *root, proto_request *req, proto_error *err) {
    return get_code(root, "room", ROOM_EXPECTED, req, err);
}

#define ARENA_CODE_EXPECTED "arena must be an arena's code: 4 to 8 letters or digits"

/* arena_create's fields (protocol/README.md, Arenas): name, minutes, players,
 * size, target, starts_in. */
static int decode_arena_create(const json_t *root, proto_request *req, proto_error *err) {
    const char *s = NULL;
    size_t len = 0;
    static const char name_expected[] = "name must be 1 to 32 printable ASCII characters";
    if (req_string(root, "name", name_expected, &s, &len, err)) return -1;
    if (len < 1 || len > PROTO_ARENA_NAME_MAX)
        return fail(err, PROTO_ERR_BAD_MESSAGE, "%s", name_expected);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return fail(err, PROTO_ERR_BAD_MESSAGE, "%s", name_expected);
    memcpy(req->arena_name, s, len);
    req->arena_name[len] = '\0';
    json_int_t x = 0;
    if (!json_object_get(root, "minutes"))
        return fail(err, PROTO_ERR_BAD_MESSAGE, "missing field \"minutes\"");
    if (opt_int(root, "minutes", PROTO_ARENA_MINUTES_MIN, PROTO_ARENA_MINUTES_MAX, &x,
                NULL, err))
        return -1;
    req->minutes = (int)x;
    proto_settings *st = &req->settings;
    *st = (proto_settings){.players = 4, .size = 4, .target = 2048, .rated = true};
    if (opt_players(root, &st->players, err) || opt_size(root, &st->size, err) ||
        opt_target(root, &st->target, err))
        return -1;
    x = PROTO_ARENA_STARTS_DEF;
    if (opt_int(root, "starts_in", 0, PROTO_ARENA_STARTS_MAX, &x, NULL, err)) return -1;
    req->starts_in = (int)x;
    return 0;
}

static int get_token(const json_t *root, proto_request *req, proto_error *err) {
    const char *s = NULL;
    size_t len = 0;
    if (req_string(root, "token", TOKEN_EXPECTED, &s, &len, err)) return -1;
    if (len < 1 || len > PROTO_TOKEN_MAX)
        return fail(err, PROTO_ERR_BAD_MESSAGE, TOKEN_EXPECTED);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7E)
            return fail(err, PROTO_ERR_BAD_MESSAGE, TOKEN_EXPECTED);
    memcpy(req->token, s, len);
    req->token[len] = '\0';
    return 0;
}

/* A dir that is not a string is a malformed message; a string that is not a
 * direction is the more specific bad_dir. */
static int get_dir(const json_t *root, proto_request *req, proto_error *err) {
    static const eng_dir dirs[] = {ENG_UP, ENG_DOWN, ENG_LEFT, ENG_RIGHT};
    const char *s = NULL;
    size_t len = 0;
    if (req_string(root, "dir", "dir must be a string: up, down, left or right", &s, &len,
                   err))
        return -1;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        const char *name = proto_dir_name(dirs[i]);
        if (len == strlen(name) && memcmp(s, name, len) == 0) {
            req->dir = dirs[i];
            return 0;
        }
    }
    return fail(err, PROTO_ERR_BAD_DIR, DIR_EXPECTED);
}

/* ---------------------------------------------------------------- decode --- */

/* Validates the fields of a request whose type is known; the checks run in
 * the order of the type's fields in protocol/README.md, first problem wins. */
static int decode_fields(const json_t *root, proto_request *req, proto_error *err) {
    proto_settings *st = &req->settings;
    json_int_t x = 0;
    switch (req->type) {
    case PROTO_REQ_HELLO: {
        if (get_name(root, req, err)) return -1;
        /* Any string is a key to check: a wrong one is bad_key, counted as a
         * failed guess (the server's business, not the decoder's). */
        const json_t *key = json_object_get(root, "key");
        if (!key) return 0;
        if (!json_is_string(key)) return fail(err, PROTO_ERR_BAD_MESSAGE, KEY_EXPECTED);
        req->has_key = true;
        size_t n = json_string_length(key);
        if (n <= PROTO_KEY_MAX && strlen(json_string_value(key)) == n)
            memcpy(req->key, json_string_value(key), n + 1);
        return 0;
    }
    case PROTO_REQ_REGISTER:
        return 0;
    case PROTO_REQ_LEADERBOARD: {
        const json_t *board = json_object_get(root, "board");
        const char *b = json_is_string(board) ? json_string_value(board) : NULL;
        if (board && !(b && (!strcmp(b, "rating") || !strcmp(b, "daily"))))
            return fail(err, PROTO_ERR_BAD_MESSAGE,
                        "board must be \"rating\" or \"daily\"");
        req->board = b && !strcmp(b, "daily") ? PROTO_BOARD_DAILY : PROTO_BOARD_RATING;
        req->settings.size = 4;
        if (req->board == PROTO_BOARD_DAILY) {
            if (opt_size(root, &req->settings.size, err)) return -1;
            const json_t *date = json_object_get(root, "date");
            if (date && !(json_is_string(date) && json_string_length(date) == 10 &&
                          strlen(json_string_value(date)) == 10))
                return fail(err, PROTO_ERR_BAD_MESSAGE,
                            "date must be a day as \"YYYY-MM-DD\" (UTC)");
            if (date) memcpy(req->date, json_string_value(date), 11);
        }
        x = 20;
        if (opt_int(root, "limit", 1, PROTO_LEADERBOARD_MAX, &x, NULL, err)) return -1;
        req->limit = (int)x;
        return 0;
    }
    case PROTO_REQ_PROFILE:
        return get_name(root, req, err);
    case PROTO_REQ_DAILY: /* a solo game to 2048 of the day's seed */
        *st = (proto_settings){.players = 1, .size = 4, .target = 2048, .time_limit = 0};
        return opt_size(root, &st->size, err);
    case PROTO_REQ_SOLO:
        /* A solo game is one player; "players" does not belong to solo. */
        *st = (proto_settings){.players = 1, .size = 4, .target = 2048, .time_limit = 0};
        if (opt_size(root, &st->size, err) || opt_target(root, &st->target, err))
            return -1;
        if (opt_int(root, "seed", 0, UINT32_MAX, &x, &req->has_seed, err)) return -1;
        if (req->has_seed) req->seed = (uint32_t)x;
        return 0;
    case PROTO_REQ_CREATE:
    case PROTO_REQ_QUICK:
        /* quick has no time limit in protocol/README.md: its time_limit is ignored. */
        *st = (proto_settings){.players = 2, .size = 4, .target = 2048, .time_limit = 0};
        if (opt_players(root, &st->players, err) || opt_size(root, &st->size, err) ||
            opt_target(root, &st->target, err))
            return -1;
        /* Every quick race on the 4x4 board is rated (protocol/README.md). */
        if (req->type != PROTO_REQ_CREATE) {
            st->rated = st->size == 4;
            return 0;
        }
        if (opt_time_limit(root, &st->time_limit, err)) return -1;
        x = 0;
        if (opt_int(root, "bots", 0, st->players - 1, &x, NULL, err)) return -1;
        req->bots = (int)x;
        x = PROTO_BOT_LEVEL_DEFAULT;
        if (opt_int(root, "level", PROTO_BOT_LEVEL_MIN, PROTO_BOT_LEVEL_MAX, &x, NULL,
                    err))
            return -1;
        req->level = (int)x;
        const json_t *rated = json_object_get(root, "rated");
        if (rated && !json_is_boolean(rated))
            return fail(err, PROTO_ERR_BAD_MESSAGE, "rated must be true or false");
        st->rated = json_is_true(rated);
        if (st->rated && st->size != 4)
            return fail(err, PROTO_ERR_BAD_MESSAGE,
                        "rated races are played on size 4 boards only");
        return 0;
    case PROTO_REQ_JOIN:
    case PROTO_REQ_WATCH:
        return get_room(root, req, err);
    case PROTO_REQ_MOVE:
        if (get_dir(root, req, err)) return -1;
        if (opt_int(root, "seq", 0, (json_int_t)PROTO_SEQ_MAX, &x, &req->has_seq, err))
            return -1;
        if (req->has_seq) req->seq = (uint64_t)x;
        return 0;
    case PROTO_REQ_RESUME:
        return get_token(root, req, err);
    case PROTO_REQ_PING: {
        json_t *t = json_object_get(root, "t");
        req->ping_t = t ? json_incref(t) : NULL;
        return 0;
    }
    case PROTO_REQ_LEAVE:
    case PROTO_REQ_ROOMS:
    case PROTO_REQ_REMATCH:
        return 0;
    case PROTO_REQ_HISTORY:
        req->limit = 20;
        if (opt_int(root, "limit", 1, 100, &x, NULL, err)) return -1;
        req->limit = (int)x ? (int)x : req->limit;
        return 0;
    case PROTO_REQ_REPLAY: {
        /* A game id as the journal gave it: this server's are integers, so a
         * string (or a negative number) names no game it has. */
        const json_t *g = json_object_get(root, "game");
        if (!json_is_integer(g) && !json_is_string(g))
            return fail(err, PROTO_ERR_BAD_MESSAGE,
                        "game must be a game id (an integer or a string from history)");
        req->has_game = json_is_integer(g) && json_integer_value(g) >= 0;
        if (req->has_game) req->game = (uint64_t)json_integer_value(g);
        return 0;
    }
    case PROTO_REQ_ARENA_CREATE:
        return decode_arena_create(root, req, err);
    case PROTO_REQ_ARENAS:
        return 0;
    case PROTO_REQ_ARENA_JOIN:
    case PROTO_REQ_ARENA_LEAVE:
    case PROTO_REQ_ARENA_RESULTS:
        return get_code(root, "arena", ARENA_CODE_EXPECTED, req, err);
    case PROTO_REQ_NONE:
        break;
    }
    return fail(err, PROTO_ERR_UNKNOWN_TYPE, "unknown type");
}

int proto_decode(const char *line, size_t len, proto_request *req, proto_error *err) {
    memset(req, 0, sizeof *req);
    memset(err, 0, sizeof *err);
    req->type = PROTO_REQ_NONE;

    /* The length, not a terminator, bounds the input: a raw NUL byte is then a
     * parse error. \u0000 is valid JSON, so it is allowed here and each field
     * check decides (it is in no field's character set). */
    json_error_t je;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!root) return fail_json(err, &je);
    int rc = -1;
    if (!json_is_object(root)) {
        fail(err, PROTO_ERR_BAD_JSON, "line is not a JSON object");
        goto out;
    }

    const json_t *type = json_object_get(root, "type");
    if (!type) {
        fail(err, PROTO_ERR_BAD_MESSAGE, "missing field \"type\"");
        goto out;
    }
    if (!json_is_string(type)) {
        fail(err, PROTO_ERR_BAD_MESSAGE, "type must be a string");
        goto out;
    }
    const char *ts = json_string_value(type);
    size_t tlen = json_string_length(type);
    int t = 0;
    while (t < REQ_COUNT &&
           !(strlen(req_names[t]) == tlen && memcmp(req_names[t], ts, tlen) == 0))
        t++;
    if (t == REQ_COUNT) {
        char quoted[QUOTE_MAX + 4];
        quote_client(quoted, ts, tlen);
        fail(err, PROTO_ERR_UNKNOWN_TYPE, "unknown type \"%s\"", quoted);
        goto out;
    }
    req->type = (proto_req_type)t;
    rc = decode_fields(root, req, err);

out:
    json_decref(root);
    if (rc != 0) proto_request_clear(req);
    return rc;
}

void proto_request_clear(proto_request *req) {
    if (!req) return;
    json_decref(req->ping_t);
    req->ping_t = NULL;
}

/* -------------------------------------------------------------- encoding --- */

/* json_dump_callback's writer: appends to a byte_buf. */
static int out_write(const char *buf, size_t size, void *data) {
    return byte_buf_append(data, buf, size);
}

/* Serialises root as one compact line with '\n' and releases root. Returns
 * the malloc'd line, or NULL (nothing leaked) if root is NULL or memory ran
 * out; `ok` false means building root failed earlier. */
static char *finish(json_t *root, bool ok, size_t *len) {
    byte_buf ob = {0};
    int rc = -1;
    if (root && ok) {
        /* 256 bytes first: most messages fit, and the block doubles after. */
        rc = byte_buf_reserve(&ob, 256);
        if (rc == 0)
            rc = json_dump_callback(root, out_write, &ob,
                                    JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (rc == 0) rc = byte_buf_reserve(&ob, 2); /* the final "\n\0" */
    }
    json_decref(root);
    if (rc != 0) {
        byte_buf_free(&ob);
        return NULL;
    }
    ob.data[ob.len++] = '\n';
    ob.data[ob.len] = '\0';
    if (len) *len = ob.len;
    return ob.data;
}

/* Adds key: v to o unless an earlier step failed; v is always consumed (a
 * NULL v, from a failed allocation, makes *ok false). */
static void put(json_t *o, const char *key, json_t *v, bool *ok) {
    if (!*ok || !o) {
        json_decref(v);
        *ok = false;
        return;
    }
    if (json_object_set_new_nocheck(o, key, v)) *ok = false;
}

static void append(json_t *a, json_t *v, bool *ok) {
    if (!*ok || !a) {
        json_decref(v);
        *ok = false;
        return;
    }
    if (json_array_append_new(a, v)) *ok = false;
}

/* Our counters are uint64_t; JSON integers here are int64: clamp, never wrap. */
static json_t *jint(uint64_t v) {
    return json_integer(v > (uint64_t)INT64_MAX ? (json_int_t)INT64_MAX : (json_int_t)v);
}

/* NULL gives JSON null; a string that is not UTF-8 fails (NULL). */
static json_t *jstr(const char *s) {
    return s ? json_string(s) : json_null();
}

/* A new object whose first field is "type". */
static json_t *typed(const char *type, bool *ok) {
    json_t *o = json_object();
    *ok = o != NULL;
    put(o, "type", json_string_nocheck(type), ok);
    return o;
}

static json_t *board_json(const eng_board *b) {
    json_t *rows = json_array();
    bool ok = rows != NULL;
    for (int r = 0; b && ok && r < b->size; r++) {
        json_t *row = json_array();
        for (int c = 0; row && c < b->size; c++)
            append(row, jint(eng_cell_value(b, r, c)), &ok);
        append(rows, row, &ok);
    }
    if (!ok) {
        json_decref(rows);
        return NULL;
    }
    return rows;
}

/* Adds the seven fields of a player object to o, in the protocol's order. */
static void put_player_fields(json_t *o, const proto_player *p, bool *ok) {
    put(o, "id", jint(p->id), ok);
    put(o, "name", jstr(p->name), ok);
    put(o, "board", board_json(p->board), ok);
    put(o, "score", jint(p->score), ok);
    put(o, "moves", jint(p->moves), ok);
    put(o, "max_tile", jint(p->board ? eng_max_tile(p->board) : 0), ok);
    put(o, "status", json_string_nocheck(proto_status_name(p->status)), ok);
    if (p->bot) put(o, "bot", json_true(), ok);
    if (p->has_rating) put(o, "rating", json_integer(p->rating), ok);
}

static json_t *players_json(const proto_player *players, int n) {
    json_t *a = json_array();
    bool ok = a != NULL;
    for (int i = 0; ok && i < n; i++) {
        json_t *o = json_object();
        ok = o != NULL;
        put_player_fields(o, &players[i], &ok);
        append(a, o, &ok);
    }
    if (!ok) {
        json_decref(a);
        return NULL;
    }
    return a;
}

char *proto_enc_welcome(uint64_t id, const char *name, const char *token, size_t *len) {
    bool ok;
    json_t *o = typed("welcome", &ok);
    put(o, "id", jint(id), &ok);
    put(o, "name", jstr(name), &ok);
    put(o, "token", jstr(token), &ok);
    put(o, "proto", json_integer(PROTO_VERSION), &ok);
    return finish(o, ok, len);
}

static json_t *rating_json(const proto_rating *r) {
    bool ok;
    json_t *o = json_object();
    ok = o != NULL;
    put(o, "rating", json_integer(r->rating), &ok);
    put(o, "mu", json_real(r->mu), &ok);
    put(o, "sigma", json_real(r->sigma), &ok);
    put(o, "games", json_integer(r->games), &ok);
    put(o, "provisional", json_boolean(r->provisional), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *proto_enc_welcome_account(uint64_t id, const char *name, const char *token,
                                const proto_rating *rating, size_t *len) {
    if (!rating) return proto_enc_welcome(id, name, token, len);
    bool ok;
    json_t *o = typed("welcome", &ok);
    put(o, "id", jint(id), &ok);
    put(o, "name", jstr(name), &ok);
    put(o, "token", jstr(token), &ok);
    put(o, "proto", json_integer(PROTO_VERSION), &ok);
    put(o, "account", json_true(), &ok);
    put(o, "rating", rating_json(rating), &ok);
    return finish(o, ok, len);
}

char *proto_enc_registered(const char *name, const char *key, size_t *len) {
    bool ok;
    json_t *o = typed("registered", &ok);
    put(o, "name", jstr(name), &ok);
    put(o, "key", jstr(key), &ok);
    return finish(o, ok, len);
}

char *proto_enc_leaderboard(const proto_board_row *rows, int n, size_t *len) {
    bool ok;
    json_t *o = typed("leaderboard", &ok);
    put(o, "board", json_string_nocheck("rating"), &ok);
    json_t *list = json_array();
    for (int i = 0; list && ok && i < n; i++) {
        json_t *r = json_object();
        put(r, "rank", jint(rows[i].rank), &ok);
        put(r, "name", jstr(rows[i].name), &ok);
        put(r, "rating", json_integer(rows[i].rating), &ok);
        put(r, "games", jint(rows[i].games), &ok);
        append(list, r, &ok);
    }
    put(o, "rows", list, &ok);
    return finish(o, ok, len);
}

char *proto_enc_profile(const proto_profile *p, size_t *len) {
    bool ok;
    json_t *o = typed("profile", &ok);
    put(o, "name", jstr(p->name), &ok);
    put(o, "rating", rating_json(&p->rating), &ok);
    put(o, "races", jint(p->races), &ok);
    put(o, "wins", jint(p->wins), &ok);
    json_t *best = json_array();
    for (int i = 0; best && ok && i < p->nbest; i++) {
        json_t *b = json_object();
        put(b, "size", json_integer(p->best[i].size), &ok);
        put(b, "score", jint(p->best[i].score), &ok);
        put(b, "max_tile", jint(p->best[i].max_tile), &ok);
        put(b, "game", jint(p->best[i].game), &ok);
        append(best, b, &ok);
    }
    put(o, "best", best, &ok);
    json_t *recent = json_array();
    for (int i = 0; recent && ok && i < p->nrecent; i++)
        append(recent, jint(p->recent[i]), &ok);
    put(o, "recent", recent, &ok);
    json_t *chart = json_array();
    for (int i = 0; chart && ok && i < p->nchart; i++)
        append(chart, json_integer(p->chart[i]), &ok);
    put(o, "chart", chart, &ok);
    return finish(o, ok, len);
}

char *proto_enc_queued(int players, int waiting, size_t *len) {
    bool ok;
    json_t *o = typed("queued", &ok);
    put(o, "players", json_integer(players), &ok);
    put(o, "waiting", json_integer(waiting), &ok);
    return finish(o, ok, len);
}

char *proto_enc_room(const char *room, const proto_player *players, int n,
                     const proto_settings *settings, size_t *len) {
    bool ok;
    json_t *o = typed("room", &ok);
    put(o, "room", jstr(room), &ok);
    json_t *list = json_array();
    for (int i = 0; list && ok && i < n; i++) {
        json_t *p = json_object();
        put(p, "id", jint(players[i].id), &ok);
        put(p, "name", jstr(players[i].name), &ok);
        if (players[i].bot) put(p, "bot", json_true(), &ok);
        append(list, p, &ok);
    }
    put(o, "players", list, &ok);
    put(o, "need", json_integer(settings->players), &ok);
    put(o, "size", json_integer(settings->size), &ok);
    put(o, "target", json_integer(settings->target), &ok);
    put(o, "time_limit", json_integer(settings->time_limit), &ok);
    put(o, "rated", json_boolean(settings->rated), &ok);
    if (settings->arena[0]) put(o, "arena", jstr(settings->arena), &ok);
    return finish(o, ok, len);
}

char *proto_enc_start(const char *room, uint64_t you, const proto_settings *settings,
                      const proto_player *players, int n, const char *commit,
                      size_t *len) {
    bool ok;
    json_t *o = typed("start", &ok);
    if (room) put(o, "room", jstr(room), &ok);
    if (you) put(o, "you", jint(you), &ok);
    put(o, "size", json_integer(settings->size), &ok);
    put(o, "target", json_integer(settings->target), &ok);
    put(o, "time_limit", json_integer(settings->time_limit), &ok);
    put(o, "players", players_json(players, n), &ok);
    put(o, "commit", jstr(commit), &ok);
    put(o, "rated", json_boolean(settings->rated), &ok);
    if (settings->arena[0]) put(o, "arena", jstr(settings->arena), &ok);
    return finish(o, ok, len);
}

/* ------------------------------------------------- state, the hot path --- */

/* `state` goes out once per move, so it is written by hand: the same bytes
 * jansson would make, without a tree of allocations. Worst case 64 cells of
 * 19 digits plus the fixed fields stays well under STATE_MAX. */
#define STATE_MAX 2048

static char *put_str(char *at, const char *s) {
    size_t n = strlen(s);
    memcpy(at, s, n);
    return at + n;
}

static char *put_u64(char *at, uint64_t v) {
    if (v > (uint64_t)INT64_MAX) v = (uint64_t)INT64_MAX; /* as jint() clamps */
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *at++ = digits[--n];
    return at;
}

static char *state_fast(const proto_player *mover, bool has_seq, uint64_t seq,
                        eng_dir dir, bool moved, uint64_t gained, const eng_spawn *spawn,
                        size_t *len) {
    char *line = malloc(STATE_MAX);
    if (!line) return NULL;
    char *at = put_str(line, "{\"type\":\"state\",\"id\":");
    at = put_u64(at, mover->id);
    at = put_str(at, ",\"name\":\"");
    at = put_str(at, mover->name);
    at = put_str(at, "\",\"board\":[");
    const eng_board *b = mover->board;
    for (int r = 0; r < b->size; r++) {
        *at++ = r ? ',' : '[';
        if (r) *at++ = '[';
        for (int c = 0; c < b->size; c++) {
            if (c) *at++ = ',';
            at = put_u64(at, eng_cell_value(b, r, c));
        }
        *at++ = ']';
    }
    at = put_str(at, "],\"score\":");
    at = put_u64(at, mover->score);
    at = put_str(at, ",\"moves\":");
    at = put_u64(at, mover->moves);
    at = put_str(at, ",\"max_tile\":");
    at = put_u64(at, eng_max_tile(b));
    at = put_str(at, ",\"status\":\"");
    at = put_str(at, proto_status_name(mover->status));
    at = put_str(at, mover->bot ? "\",\"bot\":true" : "\"");
    if (mover->has_rating) {
        at = put_str(at, ",\"rating\":");
        if (mover->rating < 0) *at++ = '-';
        at = put_u64(at, mover->rating < 0 ? 0u - (uint64_t)mover->rating
                                           : (uint64_t)mover->rating);
    }
    at = put_str(at, ",\"seq\":");
    at = has_seq ? put_u64(at, seq) : put_str(at, "null");
    at = put_str(at, ",\"dir\":\"");
    at = put_str(at, proto_dir_name(dir));
    at = put_str(at, moved ? "\",\"moved\":true,\"gained\":"
                           : "\",\"moved\":false,\"gained\":");
    at = put_u64(at, gained);
    if (spawn && spawn->value) {
        at = put_str(at, ",\"spawn\":{\"row\":");
        at = put_u64(at, (uint64_t)spawn->row);
        at = put_str(at, ",\"col\":");
        at = put_u64(at, (uint64_t)spawn->col);
        at = put_str(at, ",\"value\":");
        at = put_u64(at, spawn->value);
        at = put_str(at, "}}\n");
    } else {
        at = put_str(at, ",\"spawn\":null}\n");
    }
    *at = '\0';
    *len = (size_t)(at - line);
    return line;
}

char *proto_enc_state(const proto_player *mover, bool has_seq, uint64_t seq, eng_dir dir,
                      bool moved, uint64_t gained, const eng_spawn *spawn, size_t *len) {
    /* Names the server made or validated need no escaping; anything else
     * (and a missing board) takes the general path. */
    if (mover->board && mover->name && proto_valid_name(mover->name) && spawn &&
        spawn->row >= 0 && spawn->col >= 0)
        return state_fast(mover, has_seq, seq, dir, moved, gained, spawn, len);
    bool ok;
    json_t *o = typed("state", &ok);
    put_player_fields(o, mover, &ok);
    put(o, "seq", has_seq ? jint(seq) : json_null(), &ok);
    put(o, "dir", json_string_nocheck(proto_dir_name(dir)), &ok);
    put(o, "moved", json_boolean(moved), &ok);
    put(o, "gained", jint(gained), &ok);
    json_t *sp;
    if (spawn && spawn->value) {
        sp = json_object();
        put(sp, "row", json_integer(spawn->row), &ok);
        put(sp, "col", json_integer(spawn->col), &ok);
        put(sp, "value", jint(spawn->value), &ok);
    } else {
        sp = json_null();
    }
    put(o, "spawn", sp, &ok);
    return finish(o, ok, len);
}

char *proto_enc_end(const char *room, proto_end_reason reason, uint64_t winner,
                    const proto_player *results, int n, const eng_seed *seed,
                    const char *salt, size_t *len) {
    return proto_enc_end_rated(room, reason, winner, results, n, seed, salt, NULL, 0,
                               len);
}

char *proto_enc_end_rated(const char *room, proto_end_reason reason, uint64_t winner,
                          const proto_player *results, int n, const eng_seed *seed,
                          const char *salt, const proto_rating_change *ratings,
                          int nratings, size_t *len) {
    bool ok;
    json_t *o = typed("end", &ok);
    if (room) put(o, "room", jstr(room), &ok);
    put(o, "reason", json_string_nocheck(proto_end_reason_name(reason)), &ok);
    put(o, "winner", winner ? jint(winner) : json_null(), &ok);
    put(o, "results", players_json(results, n), &ok);
    put(o, "seed", proto_seed_json(seed), &ok);
    put(o, "salt", jstr(salt), &ok);
    if (ratings) {
        json_t *list = json_array();
        for (int i = 0; list && ok && i < nratings; i++) {
            const proto_rating_change *c = &ratings[i];
            json_t *r = json_object();
            put(r, "id", jint(c->id), &ok);
            put(r, "name", jstr(c->name), &ok);
            put(r, "before", json_integer(c->before), &ok);
            put(r, "after", json_integer(c->after), &ok);
            put(r, "mu", json_real(c->mu), &ok);
            put(r, "sigma", json_real(c->sigma), &ok);
            put(r, "provisional", json_boolean(c->provisional), &ok);
            append(list, r, &ok);
        }
        put(o, "ratings", list, &ok);
    }
    return finish(o, ok, len);
}

char *proto_enc_daily_board(int size, const char *date, const proto_daily_row *rows,
                            int n, const eng_seed *seed, const char *salt, size_t *len) {
    bool ok;
    json_t *o = typed("leaderboard", &ok);
    put(o, "board", json_string_nocheck("daily"), &ok);
    put(o, "size", json_integer(size), &ok);
    put(o, "date", jstr(date), &ok);
    json_t *list = json_array();
    for (int i = 0; list && ok && i < n; i++) {
        json_t *r = json_object();
        put(r, "rank", jint(rows[i].rank), &ok);
        put(r, "name", jstr(rows[i].name), &ok);
        put(r, "score", jint(rows[i].score), &ok);
        put(r, "max_tile", jint(rows[i].max_tile), &ok);
        put(r, "moves", jint(rows[i].moves), &ok);
        put(r, "game", jint(rows[i].game), &ok);
        append(list, r, &ok);
    }
    put(o, "rows", list, &ok);
    put(o, "seed", seed ? proto_seed_json(seed) : json_null(), &ok);
    put(o, "salt", salt ? jstr(salt) : json_null(), &ok);
    return finish(o, ok, len);
}

char *proto_line_daily(char *line, size_t *len, const char *day, bool hide,
                       int64_t reveal_at) {
    json_t *o = json_loadb(line, *len, 0, NULL);
    free(line);
    bool ok = json_is_object(o);
    if (day) put(o, "daily", jstr(day), &ok);
    if (hide) {
        put(o, "seed", json_null(), &ok);
        put(o, "salt", json_null(), &ok);
        put(o, "reveal_at", json_integer(reveal_at), &ok);
    }
    return finish(o, ok, len);
}

char *proto_enc_player(const char *room, uint64_t id, bool connected, proto_status status,
                       size_t *len) {
    bool ok;
    json_t *o = typed("player", &ok);
    if (room) put(o, "room", jstr(room), &ok);
    put(o, "id", jint(id), &ok);
    put(o, "connected", json_boolean(connected), &ok);
    put(o, "status", json_string_nocheck(proto_status_name(status)), &ok);
    return finish(o, ok, len);
}

char *proto_enc_left(size_t *len) {
    bool ok;
    json_t *o = typed("left", &ok);
    return finish(o, ok, len);
}

/* A `rooms` row's version 4 fields: names, scores (a started room), bots,
 * spectators. */
static void put_seats(json_t *e, const proto_room_info *r, bool *ok) {
    assert(r->players >= 0 && r->players <= PROTO_PLAYERS_MAX);
    json_t *names = json_array();
    json_t *scores = r->started ? json_array() : NULL;
    for (int i = 0; i < r->players; i++) {
        append(names, jstr(r->names[i] ? r->names[i] : ""), ok);
        if (scores) append(scores, jint(r->scores[i]), ok);
    }
    put(e, "names", names, ok);
    if (r->started) put(e, "scores", scores, ok);
    put(e, "bots", json_integer(r->bots), ok);
    put(e, "spectators", json_integer(r->spectators), ok);
}

char *proto_enc_rooms(const proto_room_info *rooms, int n, size_t *len) {
    bool ok;
    json_t *o = typed("rooms", &ok);
    json_t *list = json_array();
    for (int i = 0; list && ok && i < n; i++) {
        const proto_room_info *r = &rooms[i];
        json_t *e = json_object();
        put(e, "room", jstr(r->room), &ok);
        put(e, "players", json_integer(r->players), &ok);
        put(e, "need", json_integer(r->settings.players), &ok);
        put(e, "size", json_integer(r->settings.size), &ok);
        put(e, "target", json_integer(r->settings.target), &ok);
        put(e, "started", json_boolean(r->started), &ok);
        if (r->seats_known) put_seats(e, r, &ok);
        append(list, e, &ok);
    }
    put(o, "rooms", list, &ok);
    return finish(o, ok, len);
}

char *proto_enc_pong(const json_t *t, size_t *len) {
    bool ok;
    json_t *o = typed("pong", &ok);
    /* A copy keeps the caller's value untouched (the argument is const). */
    put(o, "t", t ? json_deep_copy(t) : json_null(), &ok);
    return finish(o, ok, len);
}

char *proto_enc_bye(const char *reason, size_t *len) {
    bool ok;
    json_t *o = typed("bye", &ok);
    put(o, "reason", jstr(reason), &ok);
    return finish(o, ok, len);
}

/* A message that is not valid UTF-8 (a server bug, or client bytes pasted
 * in) still goes out, with every non-ASCII byte made '?'. */
static json_t *jstr_lossy(const char *s) {
    if (!s) return json_string_nocheck("");
    json_t *v = json_string(s);
    if (v) return v;
    char *copy = strdup(s);
    if (!copy) return NULL;
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80) *p = '?';
    v = json_string_nocheck(copy);
    free(copy);
    return v;
}

char *proto_enc_error(proto_err code, const char *message, size_t *len) {
    bool ok;
    json_t *o = typed("error", &ok);
    put(o, "code", json_string_nocheck(proto_err_code(code)), &ok);
    put(o, "message", jstr_lossy(message), &ok);
    return finish(o, ok, len);
}
