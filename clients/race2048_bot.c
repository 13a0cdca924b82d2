/* race2048_bot.c - race2048-bot: a small reference bot that plays solo games and races
 * over JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ai.h"
#include "byte_buf.h"
#include "args.h"
#include "engine.h"
#include "message.h"
#include "net.h"
#include "seed.h"

/* -------------------------------------------------------------- options --- */

typedef enum bot_mode { MODE_SOLO, MODE_QUICK, MODE_JOIN, MODE_CREATE } bot_mode;
typedef enum bot_strategy { STRAT_GREEDY, STRAT_EXPECTIMAX } bot_strategy;

typedef struct bot_opts {
    const char *host;
    const char *port;
    const char *name;
    bot_mode mode;
    bool has_seed; /* --seed: solo games become reproducible */
    uint32_t seed;
    int players; /* --quick, --create */
    char room[PROTO_ROOM_MAX + 1];
    int size;
    uint32_t target;
    long games;    /* games to play before exiting */
    long delay_ms; /* pause before each move, to watch or to be fair to humans */
    bot_strategy strategy;
    bool verbose; /* every non-state line to stderr */
} bot_opts;

/* --port: a number from 1 to 65535, kept as the text net_connect takes. */
static bool parse_port(const char *v, void *to) {
    long n;
    if (!args_parse_long(v, 1, 65535, &n)) return false;
    *(const char **)to = v;
    return true;
}

static bool parse_name(const char *v, void *to) {
    if (!proto_valid_name(v)) return false;
    *(const char **)to = v;
    return true;
}

/* --join: a room code, letters and digits, into a char[PROTO_ROOM_MAX + 1]. */
static bool parse_room(const char *v, void *to) {
    size_t len = strlen(v);
    if (len < PROTO_ROOM_MIN || len > PROTO_ROOM_MAX ||
        strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") !=
            len)
        return false;
    memcpy(to, v, len + 1);
    return true;
}

/* --target: a power of two from 8 to PROTO_TARGET_MAX. */
static bool parse_target(const char *v, void *to) {
    long n;
    if (!args_parse_long(v, 8, PROTO_TARGET_MAX, &n) || (n & (n - 1))) return false;
    *(uint32_t *)to = (uint32_t)n;
    return true;
}

static bool parse_strategy(const char *v, void *to) {
    if (!strcmp(v, "greedy"))
        *(bot_strategy *)to = STRAT_GREEDY;
    else if (!strcmp(v, "expectimax"))
        *(bot_strategy *)to = STRAT_EXPECTIMAX;
    else
        return false;
    return true;
}

/* Fills o from argv. Returns ARGS_RUN, ARGS_DONE after --help or --version, or
 * ARGS_BAD after printing what is wrong (the caller exits 2). */
static int parse_args(int argc, char **argv, bot_opts *o) {
    *o = (bot_opts){.host = "127.0.0.1",
                    .port = "2048",
                    .name = "bot",
                    .mode = MODE_SOLO,
                    .players = 2,
                    .size = 4,
                    .target = 2048,
                    .games = 1,
                    .strategy = STRAT_EXPECTIMAX};
    long seed = 0, players = o->players, size = o->size;
    bool solo = false, quick = false, create = false;
    int n_solo = 0, n_quick = 0, n_join = 0, n_create = 0, n_seed = 0, n_players = 0;
    const args_flag flags[] = {
        {.name = "--help", .alias = "-h", .kind = ARGS_HELP},
        {.name = "--version", .kind = ARGS_VERSION},
        {.name = "--solo", .kind = ARGS_BOOL, .to = &solo, .seen = &n_solo},
        {.name = "--quick", .kind = ARGS_BOOL, .to = &quick, .seen = &n_quick},
        {.name = "--create", .kind = ARGS_BOOL, .to = &create, .seen = &n_create},
        {.name = "--verbose", .alias = "-v", .kind = ARGS_BOOL, .to = &o->verbose},
        {.name = "--host", .kind = ARGS_STRING, .to = &o->host, .arg = "H"},
        {.name = "--port",
         .kind = ARGS_CUSTOM,
         .to = &o->port,
         .parse = parse_port,
         .want = "a port from 1 to 65535",
         .arg = "P"},
        {.name = "--name",
         .kind = ARGS_CUSTOM,
         .to = &o->name,
         .parse = parse_name,
         .want = "a player name (1-16 letters, digits, '-', '_')",
         .arg = "NAME"},
        {.name = "--seed",
         .kind = ARGS_LONG,
         .to = &seed,
         .lo = 0,
         .hi = UINT32_MAX,
         .seen = &n_seed,
         .arg = "N"},
        {.name = "--players",
         .kind = ARGS_LONG,
         .to = &players,
         .lo = PROTO_PLAYERS_MIN,
         .hi = PROTO_PLAYERS_MAX,
         .seen = &n_players,
         .arg = "N"},
        {.name = "--join",
         .kind = ARGS_CUSTOM,
         .to = o->room,
         .parse = parse_room,
         .want = "a room code (letters and digits)",
         .seen = &n_join,
         .arg = "CODE"},
        {.name = "--size",
         .kind = ARGS_LONG,
         .to = &size,
         .lo = ENG_SIZE_MIN,
         .hi = ENG_SIZE_MAX,
         .arg = "S"},
        {.name = "--target",
         .kind = ARGS_CUSTOM,
         .to = &o->target,
         .parse = parse_target,
         .want = "a power of two from 8 to 1048576",
         .arg = "T"},
        {.name = "--games",
         .kind = ARGS_LONG,
         .to = &o->games,
         .lo = 1,
         .hi = 1000000,
         .arg = "N"},
        {.name = "--delay-ms",
         .kind = ARGS_LONG,
         .to = &o->delay_ms,
         .lo = 0,
         .hi = 60000,
         .arg = "D"},
        {.name = "--strategy",
         .kind = ARGS_CUSTOM,
         .to = &o->strategy,
         .parse = parse_strategy,
         .want = "greedy or expectimax",
         .arg = "NAME"},
    };
    const args_spec spec = {
        .prog = "race2048-bot",
        .version = RACE2048_VERSION,
        .usage =
            "usage: race2048-bot [--help] [--version] [--host H] [--port P] [OPTIONS]\n"
            "       race2048-bot [--host H] [--port P] [--name NAME]\n"
            "                    [--solo [--seed N] | --quick [--players N] |\n"
            "                     --join CODE | --create [--players N]]\n"
            "                    [--size S] [--target T] [--games N] [--delay-ms D]\n"
            "                    [--strategy greedy|expectimax] [--verbose]\n",
        .about =
            "  Plays race2048 over JSON (default: --solo on 127.0.0.1:2048, size 4,\n"
            "  target 2048, expectimax). Prints room=CODE after --create, and one\n"
            "  line per game: result=win|lose|draw reason=... score=... max_tile=...\n"
            "  moves=... seed=... verified=yes|no (seed: 64 hex digits for a server\n"
            "  seed, the number for --seed; verified: commit and replay checked)\n"
            "  --version prints the version (" RACE2048_VERSION ").\n",
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
    };
    int rc = args_parse(&spec, argc - 1, argv + 1, NULL);
    if (rc != ARGS_RUN) return rc;
    if (n_solo + n_quick + n_join + n_create > 1)
        return args_fail(&spec, "choose one of --solo, --quick, --join, --create");
    o->mode = n_quick    ? MODE_QUICK
              : n_join   ? MODE_JOIN
              : n_create ? MODE_CREATE
                         : MODE_SOLO;
    o->has_seed = n_seed > 0;
    o->seed = (uint32_t)seed;
    o->players = (int)players;
    o->size = (int)size;
    if (o->has_seed && o->mode != MODE_SOLO)
        return args_fail(&spec, "--seed is for --solo only (races pick their seed)");
    if (n_players && o->mode != MODE_QUICK && o->mode != MODE_CREATE)
        return args_fail(&spec, "--players is for --quick and --create");
    return ARGS_RUN;
}

/* ------------------------------------------------------------- strategy --- */

static const eng_dir all_dirs[4] = {ENG_LEFT, ENG_RIGHT, ENG_UP, ENG_DOWN};

/* The AI (ai/): its tables and one cache, for the bot's life. */
static ai_model *model;
static ai_cache cache;

static int strategy_init(void) {
    model = malloc(sizeof *model);
    cache.size = 1u << 18;
    cache.entries = calloc(cache.size, sizeof *cache.entries);
    if (!model || !cache.entries) return -1;
    ai_model_init(model);
    return 0;
}

static void strategy_free(void) {
    free(model);
    free(cache.entries);
}

/* The AI's move for b: one spawn layer (greedy) or its default budget
 * (expectimax: deepening within 20000 positions). `banned` is a bit per
 * direction to skip (the server said it changed nothing); then the best
 * other move by the search's values. Returns -1 if no allowed move changes
 * the board. */
static int pick(const eng_board *b, bot_strategy strategy, unsigned banned) {
    ai_budget budget = ai_budget_default();
    if (strategy == STRAT_GREEDY) budget.max_depth = 1;
    ai_cache_clear(&cache);
    ai_result r = ai_search_board(model, &cache, b, budget);
    int best = -1;
    for (int d = 0; d < 4; d++)
        if (!((banned >> d) & 1) && r.value[d] >= 0 &&
            (best < 0 || r.value[d] > r.value[best]))
            best = d;
    return best;
}

/* ------------------------------------------------------------------ bot --- */

typedef struct bot {
    bot_opts o;
    net_conn conn;
    uint64_t me; /* my player id, from welcome (and start's `you`) */
    long games_done;
    bool room_printed; /* room=CODE goes to stdout once per created room */

    /* The game in progress. */
    bool in_game;    /* between start and end */
    bool my_turn_ok; /* my status is playing or won: I may move */
    int size;
    uint64_t target;
    eng_board board;                /* my board as the server last showed it */
    eng_board start_board;          /* my board at start, to check the replay */
    char commit[PROTO_COMMIT_TEXT]; /* from start, checked against end's seed and salt */

    /* One move in flight: sent, its state not seen yet. */
    bool in_flight;
    uint64_t next_seq;
    uint64_t flight_seq;
    unsigned banned; /* directions the server said changed nothing (board drift) */

    /* The directions of my moves that changed the board, for the replay. */
    byte_buf dirs; /* the moves that moved, one eng_dir a byte, to verify the game */
} bot;

#define LOG(b, ...)                                                                      \
    do {                                                                                 \
        if ((b)->o.verbose) fprintf(stderr, __VA_ARGS__);                                \
    } while (0)

/* Queues one line and writes it out. Returns 0, or -1 after printing why. */
static int send_line(bot *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int send_line(bot *b, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line - 1) return -1;
    if (strncmp(line, "{\"type\":\"move\"", 14)) LOG(b, "> %s\n", line);
    line[n++] = '\n';
    int rc = net_queue(&b->conn, line, (size_t)n);
    if (rc == NET_OK) rc = net_flush_all(&b->conn, 10000);
    if (rc != NET_OK) {
        fprintf(stderr, "race2048-bot: send failed: %s\n", net_strerror(rc));
        return -1;
    }
    return 0;
}

/* The request that starts the next game: solo, quick, create or join, or a
 * rematch after a race made with create/join. */
static int send_game_request(bot *b) {
    const bot_opts *o = &b->o;
    switch (o->mode) {
    case MODE_SOLO:
        if (o->has_seed)
            return send_line(b,
                             "{\"type\":\"solo\",\"size\":%d,\"target\":%" PRIu32
                             ",\"seed\":%" PRIu32 "}",
                             o->size, o->target, (uint32_t)(o->seed + b->games_done));
        return send_line(b, "{\"type\":\"solo\",\"size\":%d,\"target\":%" PRIu32 "}",
                         o->size, o->target);
    case MODE_QUICK:
        return send_line(
            b, "{\"type\":\"quick\",\"players\":%d,\"size\":%d,\"target\":%" PRIu32 "}",
            o->players, o->size, o->target);
    case MODE_CREATE:
    case MODE_JOIN:
        if (b->games_done > 0) return send_line(b, "{\"type\":\"rematch\"}");
        if (o->mode == MODE_JOIN)
            return send_line(b, "{\"type\":\"join\",\"room\":\"%s\"}", o->room);
        return send_line(
            b, "{\"type\":\"create\",\"players\":%d,\"size\":%d,\"target\":%" PRIu32 "}",
            o->players, o->size, o->target);
    }
    return -1;
}

/* Reads a server board (size rows of size face values) into *out. Returns
 * 0, or -1 (out untouched) if it is not exactly that shape. */
static int parse_board(const json_t *rows, int size, eng_board *out) {
    eng_board b;
    if (!json_is_array(rows) || (int)json_array_size(rows) != size ||
        eng_board_init(&b, size) < 0)
        return -1;
    for (int r = 0; r < size; r++) {
        const json_t *row = json_array_get(rows, (size_t)r);
        if (!json_is_array(row) || (int)json_array_size(row) != size) return -1;
        for (int c = 0; c < size; c++) {
            const json_t *cell = json_array_get(row, (size_t)c);
            if (!json_is_integer(cell)) return -1;
            json_int_t v = json_integer_value(cell);
            int e = v == 0 ? 0 : v < 0 ? -1 : eng_value_exp((uint64_t)v);
            if (e < 0) return -1;
            b.cell[r * size + c] = (uint8_t)e;
        }
    }
    *out = b;
    return 0;
}

/* An integer field as uint64, or `dflt` when absent or of another type. */
static uint64_t get_u64(const json_t *o, const char *key, uint64_t dflt) {
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0
               ? (uint64_t)json_integer_value(v)
               : dflt;
}

static const char *get_str(const json_t *o, const char *key, const char *dflt) {
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* The player object with id `id` in a list, or NULL. */
static const json_t *find_player(const json_t *list, uint64_t id) {
    size_t i;
    const json_t *p;
    if (!json_is_array(list)) return NULL;
    json_array_foreach(list, i, p) {
        if (get_u64(p, "id", 0) == id) return p;
    }
    return NULL;
}

static bool may_move(const json_t *player) {
    const char *st = get_str(player, "status", "");
    return !strcmp(st, "playing") || !strcmp(st, "won");
}

/* Picks and sends my next move, if I may move and none is in flight.
 * Returns 0, or -1 on a fatal problem (printed). */
static int play(bot *b) {
    if (!b->in_game || !b->my_turn_ok || b->in_flight) return 0;
    int dir = pick(&b->board, b->o.strategy, b->banned);
    if (dir < 0) {
        /* The server says I can move but my copy of the board disagrees:
         * try the directions it has not refused yet, in a fixed order. */
        for (int i = 0; i < 4 && dir < 0; i++)
            if (!((b->banned >> all_dirs[i]) & 1)) dir = (int)all_dirs[i];
        if (dir < 0) {
            fprintf(stderr, "race2048-bot: no direction changes my board, yet the "
                            "server says I am playing\n");
            return -1;
        }
    }
    if (b->o.delay_ms > 0) {
        struct timespec ts = {b->o.delay_ms / 1000, (b->o.delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
    }
    b->flight_seq = b->next_seq++;
    b->in_flight = true;
    return send_line(b, "{\"type\":\"move\",\"dir\":\"%s\",\"seq\":%" PRIu64 "}",
                     proto_dir_name((eng_dir)dir), b->flight_seq);
}

static int on_start(bot *b, const json_t *msg) {
    int size = (int)get_u64(msg, "size", 0);
    uint64_t you = get_u64(msg, "you", 0);
    const json_t *me = find_player(json_object_get(msg, "players"), you);
    if (!you || !me || parse_board(json_object_get(me, "board"), size, &b->board) < 0) {
        fprintf(stderr, "race2048-bot: a start without my board, ignored\n");
        return 0;
    }
    b->me = you;
    b->size = size;
    b->target = get_u64(msg, "target", 0);
    b->start_board = b->board;
    snprintf(b->commit, sizeof b->commit, "%s", get_str(msg, "commit", ""));
    b->in_game = true;
    b->my_turn_ok = may_move(me);
    b->in_flight = false;
    b->banned = 0;
    b->dirs.len = 0;
    return play(b);
}

/* The eng_dir of a wire direction; false for anything else. */
static bool parse_dir(const char *text, eng_dir *out) {
    for (int i = 0; i < 4; i++) {
        if (!strcmp(text, proto_dir_name(all_dirs[i]))) {
            *out = all_dirs[i];
            return true;
        }
    }
    return false;
}

static int on_state(bot *b, const json_t *msg) {
    if (!b->in_game || get_u64(msg, "id", 0) != b->me) return 0; /* an opponent */
    const json_t *seq = json_object_get(msg, "seq");
    if (b->in_flight && json_is_integer(seq) &&
        (uint64_t)json_integer_value(seq) == b->flight_seq)
        b->in_flight = false;
    if (parse_board(json_object_get(msg, "board"), b->size, &b->board) < 0)
        fprintf(stderr, "race2048-bot: a state with a bad board, kept my copy\n");
    eng_dir dir;
    bool known = parse_dir(get_str(msg, "dir", ""), &dir);
    if (known && json_is_true(json_object_get(msg, "moved"))) {
        b->banned = 0;
        char d = (char)dir;
        if (byte_buf_append(&b->dirs, &d, 1) < 0) {
            fprintf(stderr, "race2048-bot: out of memory\n");
            return -1;
        }
    } else if (known) {
        b->banned |= 1u << dir;
    }
    b->my_turn_ok = may_move(msg);
    return play(b);
}

/* Checks the game afterwards, as any client can: the commit of start must be
 * SHA-256("SALT:SEED") of what end revealed (SEED as end wrote it), and
 * replaying my moves from that seed, with the generator its kind says
 * (ChaCha20 for a server seed, mulberry32 for mine), must give my start
 * board and my final board and score. */
static bool verify_game(bot *b, const eng_seed *seed, const char *salt,
                        const json_t *mine) {
    char want[PROTO_COMMIT_TEXT], text[ENG_SEED_TEXT_MAX];
    eng_seed_format(seed, text, sizeof text);
    if (proto_commit(salt, seed, want) < 0 || strcmp(want, b->commit)) {
        LOG(b, "verify: commit %s != sha256(%s:%s)\n", b->commit, salt, text);
        return false;
    }
    eng_game g;
    if (eng_game_new(&g, b->size, seed) < 0 ||
        memcmp(&g.board, &b->start_board, sizeof g.board)) {
        LOG(b, "verify: the start board is not the one seed %s makes\n", text);
        return false;
    }
    for (size_t i = 0; i < b->dirs.len; i++)
        eng_game_move(&g, (eng_dir)(uint8_t)b->dirs.data[i], NULL);
    eng_board final;
    if (parse_board(json_object_get(mine, "board"), b->size, &final) < 0 ||
        memcmp(&g.board, &final, sizeof final) || g.score != get_u64(mine, "score", 0)) {
        LOG(b, "verify: replaying my %zu moves does not give my final board\n",
            (size_t)b->dirs.len);
        return false;
    }
    return true;
}

/* Prints the summary line. Returns 1 when all games are done, 0 to go on
 * with the next one, -1 on a fatal problem. */
static int on_end(bot *b, const json_t *msg) {
    if (!b->in_game) return 0; /* a spectator's end cannot happen; stay calm */
    b->in_game = false;
    b->in_flight = false;
    const json_t *mine = find_player(json_object_get(msg, "results"), b->me);
    const json_t *winner = json_object_get(msg, "winner");
    const char *result;
    uint64_t max_tile = get_u64(mine, "max_tile", 0);
    if (!json_object_get(msg, "room")) /* solo: the winner is always me */
        result = max_tile >= b->target ? "win" : "lose";
    else if (json_is_null(winner))
        result = "draw";
    else
        result = get_u64(msg, "winner", 0) == b->me ? "win" : "lose";
    eng_seed seed;
    char seed_text[ENG_SEED_TEXT_MAX] = "?";
    bool known = proto_seed_from_json(json_object_get(msg, "seed"), &seed) == 0;
    if (known) eng_seed_format(&seed, seed_text, sizeof seed_text);
    bool ok = mine && known && verify_game(b, &seed, get_str(msg, "salt", ""), mine);
    printf("result=%s reason=%s score=%" PRIu64 " max_tile=%" PRIu64 " moves=%" PRIu64
           " seed=%s verified=%s\n",
           result, get_str(msg, "reason", "?"), get_u64(mine, "score", 0), max_tile,
           get_u64(mine, "moves", 0), seed_text, ok ? "yes" : "no");
    fflush(stdout);
    if (++b->games_done >= b->o.games) return 1;
    return send_game_request(b) < 0 ? -1 : 0;
}

static int on_room(bot *b, const json_t *msg) {
    if (b->o.mode == MODE_CREATE && !b->room_printed) {
        /* Printed for whoever starts the opponents: --join needs the code. */
        printf("room=%s\n", get_str(msg, "room", "?"));
        fflush(stdout);
        b->room_printed = true;
    }
    return 0;
}

/* Errors a bot can live with: a move that raced the end of its game. */
static int on_error(bot *b, const json_t *msg) {
    const char *code = get_str(msg, "code", "?");
    if (!strcmp(code, "not_playing")) {
        b->in_flight = false;
        return 0;
    }
    fprintf(stderr, "race2048-bot: server error %s: %s\n", code,
            get_str(msg, "message", ""));
    return -1;
}

/* Handles one server line. Returns 0 to go on, 1 to exit 0, -1 to exit 1. */
static int on_line(bot *b, const char *line, size_t len) {
    if (line[0] != '{') return 0; /* text-mode bytes before JSON mode: skip */
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, 0, &jerr);
    const char *type = get_str(msg, "type", NULL);
    if (!type) {
        LOG(b, "skipped a line that is not a typed JSON object: %.80s\n", line);
        json_decref(msg);
        return 0;
    }
    if (strcmp(type, "state")) LOG(b, "< %s\n", line);
    int rc = 0;
    if (!strcmp(type, "welcome"))
        b->me = get_u64(msg, "id", 0);
    else if (!strcmp(type, "room"))
        rc = on_room(b, msg);
    else if (!strcmp(type, "start"))
        rc = on_start(b, msg);
    else if (!strcmp(type, "state"))
        rc = on_state(b, msg);
    else if (!strcmp(type, "end"))
        rc = on_end(b, msg);
    else if (!strcmp(type, "error"))
        rc = on_error(b, msg);
    else if (!strcmp(type, "bye")) {
        fprintf(stderr, "race2048-bot: the server is stopping (%s)\n",
                get_str(msg, "reason", "?"));
        rc = 1;
    }
    /* queued, player, left, rooms, pong and any future type: nothing to do. */
    json_decref(msg);
    return rc;
}

int main(int argc, char **argv) {
    bot b = {0};
    int rc = parse_args(argc, argv, &b.o);
    if (rc != ARGS_RUN) return rc == ARGS_DONE ? 0 : 2;
    if (strategy_init() < 0) {
        fprintf(stderr, "race2048-bot: out of memory\n");
        return 1;
    }
    b.next_seq = 1;
    rc = net_connect(&b.conn, b.o.host, b.o.port);
    if (rc != NET_OK) {
        fprintf(stderr, "race2048-bot: %s:%s: %s\n", b.o.host, b.o.port,
                net_strerror(rc));
        return 1;
    }
    /* hello goes first and at once: the server picks JSON mode from it. */
    int status = 1;
    if (send_line(&b, "{\"type\":\"hello\",\"name\":\"%s\"}", b.o.name) < 0 ||
        send_game_request(&b) < 0)
        goto done;
    for (;;) {
        char *line;
        size_t len;
        rc = net_wait_line(&b.conn, -1, &line, &len);
        if (rc != NET_OK) {
            fprintf(stderr, "race2048-bot: %s\n", net_strerror(rc));
            goto done;
        }
        rc = on_line(&b, line, len);
        if (rc != 0) {
            status = rc > 0 ? 0 : 1;
            goto done;
        }
    }
done:
    net_close(&b.conn);
    strategy_free();
    byte_buf_free(&b.dirs);
    return status;
}
