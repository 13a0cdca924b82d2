/* message.h - JSON lines to validated requests, and server messages to JSON lines. */
#ifndef RACE2048_MESSAGE_H
#define RACE2048_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "end_reason.h"
#include "engine.h"

#define PROTO_VERSION           4
#define PROTO_NAME_MAX          16 /* a player name is 1..16 of [A-Za-z0-9_-] */
#define PROTO_ROOM_MIN          4  /* a room code is 4..8 of [A-Z0-9] */
#define PROTO_ROOM_MAX          8
#define PROTO_TOKEN_MAX         64 /* resume tokens are at most this many chars */
#define PROTO_PLAYERS_MIN       2
#define PROTO_PLAYERS_MAX       8
#define PROTO_TARGET_MAX        (1u << 20)
#define PROTO_TIME_LIMIT_MAX    86400
#define PROTO_SEQ_MAX           ((UINT64_C(1) << 53) - 1)
#define PROTO_BOT_LEVEL_MIN     1 /* server-run bots: level 1 (a beginner) .. 5 */
#define PROTO_BOT_LEVEL_MAX     5
#define PROTO_BOT_LEVEL_DEFAULT 3
/* A human's resume code (text mode: command.h) has this many characters. */
#define PROTO_RESUME_CODE_LEN 8
/* An account key on the wire: 32 lowercase hex digits (128 bits); a `hello`'s
 * `key` of up to this many characters is kept for the check (longer is bad_key). */
#define PROTO_KEY_MAX 64
/* An arena's name: 1..32 printable ASCII characters; its minutes; its start. */
#define PROTO_ARENA_NAME_MAX    32
#define PROTO_ARENA_MINUTES_MIN 5
#define PROTO_ARENA_MINUTES_MAX 240
#define PROTO_ARENA_STARTS_MAX  86400
#define PROTO_ARENA_STARTS_DEF  60
/* Rows of a `leaderboard` reply. */
#define PROTO_LEADERBOARD_MAX 100

/* The error codes of protocol/README.md; 0 is success. */
typedef enum proto_err {
    PROTO_OK = 0,
    PROTO_ERR_BAD_JSON,
    PROTO_ERR_BAD_MESSAGE,
    PROTO_ERR_UNKNOWN_TYPE,
    PROTO_ERR_BAD_DIR,
    PROTO_ERR_NOT_PLAYING,
    PROTO_ERR_ROOM_NOT_FOUND,
    PROTO_ERR_ALREADY_STARTED,
    PROTO_ERR_BUSY,
    PROTO_ERR_LINE_TOO_LONG,
    PROTO_ERR_BAD_TOKEN,
    PROTO_ERR_SERVER_FULL,
    PROTO_ERR_SLOW_CONSUMER,
    PROTO_ERR_GAME_NOT_FOUND,
    PROTO_ERR_RATE_LIMITED,
    PROTO_ERR_ROOM_FULL,
    PROTO_ERR_UNAVAILABLE, /* cluster mode: the node a request needs cannot be reached */
    PROTO_ERR_NAME_TAKEN,  /* that name is an account's (version 4) */
    PROTO_ERR_BAD_KEY,     /* wrong account key */
    PROTO_ERR_ACCOUNT_NEEDED,   /* only accounts may do that */
    PROTO_ERR_PLAYER_NOT_FOUND, /* `profile` of a name that is no account's */
    PROTO_ERR_DAILY_PLAYED,     /* the account has played that daily game */
    PROTO_ERR_ARENA_NOT_FOUND,  /* no arena has that code (issue 28) */
    PROTO_ERR_ARENA_OVER,       /* the arena has finished */
} proto_err;

/* The wire name of an error code ("bad_json", ...). */
const char *proto_err_code(proto_err err);

/* A decode failure: the code and a message naming the field and what was
 * expected, ready to send as the error's "message". */
typedef struct proto_error {
    proto_err code;
    char message[160];
} proto_error;

/* ------------------------------------------------------------- requests --- */

typedef enum proto_req_type {
    PROTO_REQ_HELLO,
    PROTO_REQ_SOLO,
    PROTO_REQ_CREATE,
    PROTO_REQ_JOIN,
    PROTO_REQ_QUICK,
    PROTO_REQ_WATCH,
    PROTO_REQ_MOVE,
    PROTO_REQ_LEAVE,
    PROTO_REQ_RESUME,
    PROTO_REQ_ROOMS,
    PROTO_REQ_PING,
    PROTO_REQ_REMATCH,
    PROTO_REQ_HISTORY,
    PROTO_REQ_REPLAY,
    PROTO_REQ_REGISTER,     /* version 4: accounts */
    PROTO_REQ_LEADERBOARD,  /* version 4 */
    PROTO_REQ_PROFILE,      /* version 4 */
    PROTO_REQ_DAILY,        /* version 4: the daily challenge (settings.size) */
    PROTO_REQ_ARENA_CREATE, /* version 4: arenas (message_arena.c) */
    PROTO_REQ_ARENAS,
    PROTO_REQ_ARENA_JOIN,
    PROTO_REQ_ARENA_LEAVE,
    PROTO_REQ_ARENA_RESULTS,
    PROTO_REQ_NONE, /* only after a failed decode: the line named no valid type */
} proto_req_type;

/* A game's settings; decode fills the defaults of protocol/README.md for absent
 * fields (players 2, size 4, target 2048, time_limit 0). */
typedef struct proto_settings {
    int players;         /* create, quick: 2..8 */
    int size;            /* 3..8 */
    uint32_t target;     /* a power of two, 8..2^20 */
    uint32_t time_limit; /* seconds, 0..86400, 0 = none */
    bool rated;          /* a rated race (create's `rated`; every quick of size 4) */
    /* An arena's race: the arena's code, which `room` and `start` carry; "" else. */
    char arena[PROTO_ROOM_MAX + 1];
} proto_settings;

/* The leaderboards of `leaderboard`'s `board`. */
typedef enum proto_board { PROTO_BOARD_RATING, PROTO_BOARD_DAILY } proto_board;

/* One validated client request. Only the fields of its type are set. */
typedef struct proto_request {
    proto_req_type type;
    char name[PROTO_NAME_MAX + 1]; /* hello, profile */
    bool has_key;                  /* hello: logs in to the account `name` */
    char key[PROTO_KEY_MAX + 1];   /* hello: as sent ("" if longer than PROTO_KEY_MAX) */
    proto_board board;             /* leaderboard (limit: 1..100, default 20) */
    char date[11];                 /* leaderboard daily: "" (today) or 10 chars */
    proto_settings settings;       /* solo, create, quick */
    bool has_seed;                 /* solo */
    uint32_t seed;
    char room[PROTO_ROOM_MAX + 1]; /* join, watch: upper-cased */
    eng_dir dir;                   /* move */
    bool has_seq;                  /* move */
    uint64_t seq;
    char token[PROTO_TOKEN_MAX + 1]; /* resume */
    json_t *ping_t;                  /* ping: the value to echo (owned), or NULL */
    int limit;                       /* history, leaderboard: 1..100, default 20 */
    int bots;                        /* create: seats for server-run bots, 0..players-1 */
    int level;                       /* create: the bots' level, 1..5, default 3 */
    bool has_game;                   /* replay: the id is one this server could have */
    uint64_t game;
    /* arena_create: its name (1..32 printable ASCII), minutes (5..240),
     * starts_in (seconds, 0..86400); settings.players/size/target the races'.
     * arena_join, arena_leave, arena_results: `arena`, upper-cased, in room. */
    char arena_name[PROTO_ARENA_NAME_MAX + 1];
    int minutes;
    int starts_in;
    /* resume from text mode: a seat's code (normalised) instead of a token;
     * never set by proto_decode (JSON clients have no codes). */
    char code[PROTO_RESUME_CODE_LEN + 1];
} proto_request;

/* Decodes one line (without its newline; NUL bytes in it are an error) into
 * *req. Returns 0, or -1 with *err filled by the first problem in the order
 * of protocol/README.md: bad_json, unknown_type, then bad_message / bad_dir. On
 * failure *req holds nothing that needs releasing, but after bad_message or
 * bad_dir req->type is the request's type (the server treats a bad `hello`
 * differently from other bad requests). A line with no string `type` is
 * bad_message with req->type PROTO_REQ_NONE: it asked for nothing. */
int proto_decode(const char *line, size_t len, proto_request *req, proto_error *err);

/* Releases what a decoded request owns (the ping value). Safe to call twice. */
void proto_request_clear(proto_request *req);

/* True for a valid player name: 1..16 of [A-Za-z0-9_-]. */
bool proto_valid_name(const char *name);

/* ------------------------------------------------------ server messages --- */

typedef enum proto_status {
    PROTO_PLAYING,
    PROTO_WON,
    PROTO_OVER,
    PROTO_LEFT,
} proto_status;

const char *proto_status_name(proto_status status); /* "playing", ... */
const char *proto_dir_name(eng_dir dir);            /* "left", ... */
/* A direction as one letter of a recorded game's moves (l r u d), and back:
 * returns 0, or -1 for any other character. */
char proto_dir_letter(eng_dir dir);
int proto_dir_from_letter(char letter, eng_dir *dir);

/* One seat's result: who sits there, its board and where it stands. The one
 * value type of a seat's result: the room's seat (server/game/room.h), the
 * view text mode draws (server/core/view.h) and a finished game's record
 * (record.h) embed it; the encoders read it through a proto_player
 * (proto_player_of). */
#define PROTO_RESULT_MEMBERS                                                             \
    uint64_t id;                                                                         \
    char name[PROTO_NAME_MAX + 1];                                                       \
    eng_board board;                                                                     \
    uint64_t score;                                                                      \
    uint32_t moves; /* moves that changed the board */                                   \
    proto_status status;                                                                 \
    bool bot; /* a server-run bot: its object says "bot":true */
typedef struct proto_result {
    PROTO_RESULT_MEMBERS
} proto_result;

/* A struct member that is a proto_result named `result` whose members are
 * also the struct's own (seat->score is seat->result.score), so that a struct
 * embeds the one type without renaming what its readers use: a union of the
 * result and an anonymous struct of the same members (C11 anonymous members;
 * the members are a common initial sequence, so either name reads them), as
 * Linux's struct_group_tagged() does. */
#define PROTO_RESULT_EMBEDDED                                                            \
    union {                                                                              \
        proto_result result;                                                             \
        struct {                                                                         \
            PROTO_RESULT_MEMBERS                                                         \
        };                                                                               \
    }

/* A read-only view of one player, as the encoder needs it. */
typedef struct proto_player {
    uint64_t id;
    const char *name;
    const eng_board *board;
    uint64_t score;
    uint32_t moves;
    proto_status status;
    bool bot;        /* a server-run bot: its object says "bot":true */
    bool has_rating; /* logged in to an account: its object says "rating":rating */
    int rating;
} proto_player;

/* The encoders' view of a result (pointing into it), without a rating. */
static inline proto_player proto_player_of(const proto_result *r) {
    return (proto_player){.id = r->id,
                          .name = r->name,
                          .board = &r->board,
                          .score = r->score,
                          .moves = r->moves,
                          .status = r->status,
                          .bot = r->bot};
}

/* An account's rating object: {"rating","mu","sigma","games","provisional"}. */
typedef struct proto_rating {
    int rating; /* round(60 * mu) */
    double mu, sigma;
    uint32_t games;
    bool provisional;
} proto_rating;

/* One account's change in a rated race's `end`. */
typedef struct proto_rating_change {
    uint64_t id;
    const char *name;
    int before, after;
    double mu, sigma; /* after */
    bool provisional; /* after */
} proto_rating_change;

/* A `leaderboard` row of the rating board. */
typedef struct proto_board_row {
    uint64_t rank;
    const char *name;
    int rating;
    uint32_t games;
} proto_board_row;

/* A `profile` reply's best score on one board size. */
typedef struct proto_profile_best {
    int size;
    uint64_t score;
    uint32_t max_tile;
    uint64_t game;
} proto_profile_best;

/* A `profile` reply. */
typedef struct proto_profile {
    const char *name;
    proto_rating rating;
    uint32_t races, wins;
    const proto_profile_best *best;
    int nbest;
    const uint64_t *recent; /* newest first */
    int nrecent;
    const int32_t *chart; /* the ratings after the last rated races, oldest first */
    int nchart;
} proto_profile;

/* One row of a `rooms` reply. */
typedef struct proto_room_info {
    const char *room;
    int players; /* joined so far */
    proto_settings settings;
    bool started;
    /* Who is in it (version 4), sent only when seats_known: names[i] of the
     * `players` seats in seat order, scores[i] (sent for a started room),
     * how many of them are server-run bots, and the spectators now. A row
     * from a node that does not say them has seats_known false. */
    bool seats_known;
    const char *names[PROTO_PLAYERS_MAX];
    uint64_t scores[PROTO_PLAYERS_MAX];
    int bots;
    int spectators;
} proto_room_info;

/* Encoders. Each returns one compact JSON line ending in '\n', allocated
 * with malloc (the caller frees it with free()), and its length in *len.
 * Output is byte-for-byte stable for the same input. Returns NULL if memory
 * runs out. `room` may be NULL where protocol/README.md lets it be absent (solo). */
char *proto_enc_welcome(uint64_t id, const char *name, const char *token, size_t *len);
/* welcome of a player logged in to an account ("account":true and its rating);
 * rating NULL is proto_enc_welcome. */
char *proto_enc_welcome_account(uint64_t id, const char *name, const char *token,
                                const proto_rating *rating, size_t *len);
/* {"type":"registered","name","key"}: key is the 32 hex digits, sent this once. */
char *proto_enc_registered(const char *name, const char *key, size_t *len);
/* {"type":"leaderboard","board":"rating","rows":[{"rank","name","rating","games"}]} */
char *proto_enc_leaderboard(const proto_board_row *rows, int n, size_t *len);
/* {"type":"profile","name","rating":{...},"races","wins","best","recent","chart"} */
char *proto_enc_profile(const proto_profile *p, size_t *len);
char *proto_enc_queued(int players, int waiting, size_t *len);
/* `players` views need only id and name. */
char *proto_enc_room(const char *room, const proto_player *players, int n,
                     const proto_settings *settings, size_t *len);
/* `you` 0 means a spectator (no "you" field). commit: 64 hex digits. */
char *proto_enc_start(const char *room, uint64_t you, const proto_settings *settings,
                      const proto_player *players, int n, const char *commit,
                      size_t *len);
/* seq: has_seq false gives "seq":null; spawn value 0 gives "spawn":null. */
char *proto_enc_state(const proto_player *mover, bool has_seq, uint64_t seq, eng_dir dir,
                      bool moved, uint64_t gained, const eng_spawn *spawn, size_t *len);
/* winner 0 gives "winner":null. results are already ranked, best first.
 * seed as proto_seed_json() writes it: a string or a number by its kind. */
char *proto_enc_end(const char *room, proto_end_reason reason, uint64_t winner,
                    const proto_player *results, int n, const eng_seed *seed,
                    const char *salt, size_t *len);
/* The same with `ratings` (a rated race: one change per account in it, in the
 * order of results); ratings NULL gives no `ratings` member. */
char *proto_enc_end_rated(const char *room, proto_end_reason reason, uint64_t winner,
                          const proto_player *results, int n, const eng_seed *seed,
                          const char *salt, const proto_rating_change *ratings,
                          int nratings, size_t *len);
/* A daily board row. */
typedef struct proto_daily_row {
    uint64_t rank;
    const char *name;
    uint32_t score, max_tile, moves;
    uint64_t game;
} proto_daily_row;
/* {"type":"leaderboard","board":"daily","size","date","rows":[...],"seed","salt"}:
 * seed and salt null unless given (the day is over). */
char *proto_enc_daily_board(int size, const char *date, const proto_daily_row *rows,
                            int n, const eng_seed *seed, const char *salt, size_t *len);
/* A daily game's line (version 4), from a `start` or `end` line of *len bytes
 * (malloc'd; taken): day non-NULL adds "daily":day; hide sets "seed" and "salt"
 * to null and adds "reveal_at". Returns the new line (length in *len), or NULL
 * if memory runs out. */
char *proto_line_daily(char *line, size_t *len, const char *day, bool hide,
                       int64_t reveal_at);
char *proto_enc_player(const char *room, uint64_t id, bool connected, proto_status status,
                       size_t *len);
char *proto_enc_left(size_t *len);
char *proto_enc_rooms(const proto_room_info *rooms, int n, size_t *len);
/* t NULL gives "t":null. */
char *proto_enc_pong(const json_t *t, size_t *len);
char *proto_enc_bye(const char *reason, size_t *len);
char *proto_enc_error(proto_err code, const char *message, size_t *len);

/* ---------------------------------------------- arenas (message_arena.c) --- */

typedef enum proto_arena_status {
    PROTO_ARENA_UPCOMING,
    PROTO_ARENA_RUNNING,
    PROTO_ARENA_FINISHED,
} proto_arena_status;

const char *proto_arena_status_name(proto_arena_status s);

/* One row of an arena's standings. */
typedef struct proto_arena_row {
    int rank;
    uint64_t id;
    const char *name;
    int64_t points;
    int races, wins, streak;
    bool waiting;
} proto_arena_row;

/* An arena as the `arena` object shows it, without `you`. */
typedef struct proto_arena_info {
    const char *code;
    const char *name;
    proto_arena_status status;
    int64_t starts_ms, ends_ms;
    int players, size;
    uint32_t target;
    uint64_t entrants;
    const proto_arena_row *rows; /* the standings shown (NULL: no `standings`) */
    int nrows;
} proto_arena_info;

/* The `arena` object without its closing brace and newline: the part every
 * entrant shares (`{"type":"arena",...,"standings":[...]`). Finish it with
 * proto_arena_finish. NULL if memory runs out. */
char *proto_enc_arena_shared(const proto_arena_info *a, size_t *len);
/* One receiver's `arena` line: the shared part, then `"you":{row}` when you
 * is non-NULL, `}` and '\n'. Returns a malloc'd line, or NULL. */
char *proto_arena_finish(const char *shared, size_t shared_len,
                         const proto_arena_row *you, size_t *len);
/* {"type":"arenas","arenas":[arena objects without standings]}. */
char *proto_enc_arenas(const proto_arena_info *arenas, int n, size_t *len);

#endif
