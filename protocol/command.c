/* command.c - one text-mode line (telnet, netcat) parsed into a command or a list of
 * moves. */
#include "command.h"

#include <stdio.h>
#include <string.h>

#include "hex.h"

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

static char lower(char c) {
    return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}
static char upper(char c) {
    return c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
}

static bool is_alnum(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A word of the line: [p, p + len). */
typedef struct word {
    const char *p;
    size_t len;
} word;

/* Case-insensitive comparison of a word with a lower-case literal. */
static bool word_is(word w, const char *lit) {
    size_t n = strlen(lit);
    if (w.len != n) return false;
    for (size_t i = 0; i < n; i++)
        if (lower(w.p[i]) != lit[i]) return false;
    return true;
}

/* Splits [p, end) into words; returns how many (at most max are kept). */
static size_t split(const char *p, const char *end, word *words, size_t max) {
    size_t n = 0;
    while (p < end) {
        while (p < end && is_space(*p))
            p++;
        if (p == end) break;
        const char *start = p;
        while (p < end && !is_space(*p))
            p++;
        if (n < max) words[n] = (word){start, (size_t)(p - start)};
        n++;
    }
    return n;
}

static proto_cmd_type fail(proto_command *cmd, const char *message) {
    cmd->type = PROTO_CMD_ERROR;
    snprintf(cmd->error, sizeof cmd->error, "%s", message);
    return cmd->type;
}

/* ------------------------------------------------------------------ moves --- */

static int letter_dir(char c) {
    switch (lower(c)) {
    case 'w':
    case 'k':
        return ENG_UP;
    case 's':
    case 'j':
        return ENG_DOWN;
    case 'a':
    case 'h':
        return ENG_LEFT;
    case 'd':
    case 'l':
        return ENG_RIGHT;
    }
    return -1;
}

/* A move word (up, down, left, right) at p, ending at a space, an Esc or the
 * end of the line. Returns its length and sets *dir, or 0. */
static size_t move_word(const char *p, const char *end, int *dir) {
    static const struct {
        const char *word;
        eng_dir dir;
    } words[] = {
        {"up", ENG_UP}, {"down", ENG_DOWN}, {"left", ENG_LEFT}, {"right", ENG_RIGHT}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(end - p) < n || !word_is((word){p, n}, words[i].word)) continue;
        if (p + n < end && !is_space(p[n]) && p[n] != 0x1b) continue;
        *dir = (int)words[i].dir;
        return n;
    }
    return 0;
}

/* Reads [p, end) as moves only. Returns false (cmd untouched) if anything
 * in it is not a move; an over-long move line is an error. */
static bool parse_moves(const char *p, const char *end, proto_command *cmd) {
    static const eng_dir arrows[4] = {ENG_UP, ENG_DOWN, ENG_RIGHT, ENG_LEFT};
    uint8_t moves[PROTO_CMD_MOVES_MAX];
    size_t n = 0, total = 0;
    bool boundary = true; /* a move word may start here ("dup" is no "d up") */
    while (p < end) {
        int dir = -1;
        size_t used = 1;
        if (is_space(*p)) {
            boundary = true;
            p++;
            continue;
        }
        if (*p == 0x1b) {
            /* An arrow key typed into a line: ESC [ A-D or ESC O A-D. */
            if (end - p < 3 || (p[1] != '[' && p[1] != 'O') || p[2] < 'A' || p[2] > 'D')
                return false;
            dir = (int)arrows[p[2] - 'A'];
            used = 3;
            boundary = true;
        } else if (boundary && (used = move_word(p, end, &dir)) > 0) {
            boundary = true;
        } else {
            dir = letter_dir(*p);
            used = 1;
            boundary = false;
            if (dir < 0) return false;
        }
        if (n < PROTO_CMD_MOVES_MAX) moves[n++] = (uint8_t)dir;
        total++;
        p += used;
    }
    if (total == 0) return false;
    if (total > PROTO_CMD_MOVES_MAX) {
        snprintf(cmd->error, sizeof cmd->error,
                 "too many moves in one line (%zu): at most %d, the line was ignored",
                 total, PROTO_CMD_MOVES_MAX);
        cmd->type = PROTO_CMD_ERROR;
        return true;
    }
    cmd->type = PROTO_CMD_MOVES;
    cmd->n_moves = n;
    memcpy(cmd->moves, moves, n);
    return true;
}

/* --------------------------------------------------------------- commands --- */

/* A small decimal number; -1 if w is not one. */
static int number(word w) {
    if (w.len == 0 || w.len > 3) return -1;
    int v = 0;
    for (size_t i = 0; i < w.len; i++) {
        if (w.p[i] < '0' || w.p[i] > '9') return -1;
        v = v * 10 + (w.p[i] - '0');
    }
    return v;
}

/* An optional number argument in [lo, hi]. */
static proto_cmd_type number_arg(proto_command *cmd, proto_cmd_type type,
                                 const word *args, size_t nargs, int lo, int hi,
                                 const char *message) {
    if (nargs == 0) {
        cmd->type = type;
        cmd->number = 0;
        return type;
    }
    int v = nargs == 1 ? number(args[0]) : -1;
    if (v < lo || v > hi) return fail(cmd, message);
    cmd->type = type;
    cmd->number = v;
    return type;
}

/* A room code argument: 4..8 letters and digits, upper-cased. */
static proto_cmd_type room_arg(proto_command *cmd, proto_cmd_type type, const word *args,
                               size_t nargs, const char *message) {
    if (nargs != 1 || args[0].len < PROTO_ROOM_MIN || args[0].len > PROTO_ROOM_MAX)
        return fail(cmd, message);
    for (size_t i = 0; i < args[0].len; i++) {
        if (!is_alnum(args[0].p[i])) return fail(cmd, message);
        cmd->room[i] = upper(args[0].p[i]);
    }
    cmd->room[args[0].len] = '\0';
    cmd->type = type;
    return type;
}

/* The unknown word, quoted safely: printable ASCII only, and short. */
static proto_cmd_type unknown(proto_command *cmd, word w) {
    char shown[24];
    size_t n = 0;
    for (size_t i = 0; i < w.len && n < 16; i++) {
        unsigned char c = (unsigned char)w.p[i];
        shown[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    shown[n] = '\0';
    snprintf(cmd->error, sizeof cmd->error, "unknown command '%s%s' - type help", shown,
             w.len > n ? "..." : "");
    cmd->type = PROTO_CMD_ERROR;
    return cmd->type;
}

/* A command word and what reads its arguments (words after it, nargs of
 * them): each sets cmd (or fails it) and returns cmd->type. */
typedef struct command_word command_word;
typedef proto_cmd_type (*args_parser)(proto_command *cmd, const command_word *cw,
                                      const word *args, size_t nargs);
struct command_word {
    const char *word;
    proto_cmd_type type;
    args_parser parse;
};

static proto_cmd_type ok(proto_command *cmd, proto_cmd_type type) {
    cmd->type = type;
    return type;
}

/* A command that takes nothing; "help solo" still deserves the help. */
static proto_cmd_type parse_bare(proto_command *cmd, const command_word *cw,
                                 const word *args, size_t nargs) {
    (void)args;
    if (nargs > 0 && cw->type != PROTO_CMD_HELP) {
        snprintf(cmd->error, sizeof cmd->error, "%s takes nothing after it", cw->word);
        return ok(cmd, PROTO_CMD_ERROR);
    }
    return ok(cmd, cw->type);
}

static proto_cmd_type parse_name(proto_command *cmd, const command_word *cw,
                                 const word *args, size_t nargs) {
    static const char msg[] = "name takes one name: 1 to 16 letters A-Z, digits, _ or -";
    if (nargs != 1 || args[0].len > PROTO_NAME_MAX) return fail(cmd, msg);
    memcpy(cmd->name, args[0].p, args[0].len);
    cmd->name[args[0].len] = '\0';
    if (strlen(cmd->name) != args[0].len || !proto_valid_name(cmd->name)) {
        cmd->name[0] = '\0';
        return fail(cmd, msg);
    }
    return ok(cmd, cw->type);
}

static proto_cmd_type parse_size(proto_command *cmd, const command_word *cw,
                                 const word *args, size_t nargs) {
    return number_arg(cmd, cw->type, args, nargs, ENG_SIZE_MIN, ENG_SIZE_MAX,
                      "solo takes a size from 3 to 8 (solo 4 is the usual 4x4)");
}

/* daily: a size. */
static proto_cmd_type parse_daily(proto_command *cmd, const command_word *cw,
                                  const word *args, size_t nargs) {
    return number_arg(cmd, cw->type, args, nargs, ENG_SIZE_MIN, ENG_SIZE_MAX,
                      "daily takes a size from 3 to 8 (default 4)");
}

/* top, or top daily [SIZE]: the rating board, or today's daily board. */
static proto_cmd_type parse_top(proto_command *cmd, const command_word *cw,
                                const word *args, size_t nargs) {
    if (nargs == 0) return ok(cmd, cw->type);
    if (!word_is(args[0], "daily"))
        return fail(cmd, "top takes nothing, or daily and a size: top daily 4");
    return number_arg(cmd, PROTO_CMD_TOP_DAILY, &args[1], nargs - 1, ENG_SIZE_MIN,
                      ENG_SIZE_MAX, "top daily takes a size from 3 to 8 (default 4)");
}

/* create, quick: a number of players. */
static proto_cmd_type parse_players(proto_command *cmd, const command_word *cw,
                                    const word *args, size_t nargs) {
    char msg[64];
    snprintf(msg, sizeof msg, "%s takes a number of players from 2 to 8", cw->word);
    return number_arg(cmd, cw->type, args, nargs, PROTO_PLAYERS_MIN, PROTO_PLAYERS_MAX,
                      msg);
}

/* create [PLAYERS [SIZE [TARGET]]]: a room's settings, in the order the
 * lobby asks for them (the players first, as create N always was). */
static proto_cmd_type parse_create(proto_command *cmd, const command_word *cw,
                                   const word *args, size_t nargs) {
    static const char msg[] =
        "create takes players (2-8), then a size (3-8), then a target (a power of two, "
        "8 or more): create 2 4 512";
    if (nargs > 3) return fail(cmd, msg);
    int players = nargs > 0 ? number(args[0]) : 0;
    int size = nargs > 1 ? number(args[1]) : 0;
    if (nargs > 0 && (players < PROTO_PLAYERS_MIN || players > PROTO_PLAYERS_MAX))
        return fail(cmd, msg);
    if (nargs > 1 && (size < ENG_SIZE_MIN || size > ENG_SIZE_MAX)) return fail(cmd, msg);
    uint32_t target = 0;
    if (nargs > 2) {
        word w = args[2];
        if (w.len == 0 || w.len > 7) return fail(cmd, msg);
        for (size_t i = 0; i < w.len; i++) {
            if (w.p[i] < '0' || w.p[i] > '9') return fail(cmd, msg);
            target = target * 10 + (uint32_t)(w.p[i] - '0');
        }
        /* As JSON's create: a power of two from 8 to PROTO_TARGET_MAX. */
        if (target < 8 || target > PROTO_TARGET_MAX || (target & (target - 1)))
            return fail(cmd, msg);
    }
    cmd->number = players;
    cmd->size = size;
    cmd->target = target;
    return ok(cmd, cw->type);
}

/* bot: a level. */
static proto_cmd_type parse_level(proto_command *cmd, const command_word *cw,
                                  const word *args, size_t nargs) {
    return number_arg(cmd, cw->type, args, nargs, PROTO_BOT_LEVEL_MIN,
                      PROTO_BOT_LEVEL_MAX,
                      "bot takes a level from 1 (a beginner) to 5 (an expert)");
}

/* join, watch: a room code. */
static proto_cmd_type parse_room(proto_command *cmd, const command_word *cw,
                                 const word *args, size_t nargs) {
    char msg[64];
    snprintf(msg, sizeof msg, "%s takes a room code: 4 to 8 letters and digits",
             cw->word);
    return room_arg(cmd, cw->type, args, nargs, msg);
}

/* The token a JSON client got in its welcome: 16 to 64 hex digits, lower-cased. */
static bool token_arg(proto_command *cmd, const word *args, size_t nargs) {
    if (nargs != 1 || args[0].len < 16 || args[0].len > PROTO_TOKEN_MAX) return false;
    for (size_t i = 0; i < args[0].len; i++) {
        char c = lower(args[0].p[i]);
        if (proto_hex_digit(c) < 0) {
            cmd->token[0] = '\0';
            return false;
        }
        cmd->token[i] = c;
    }
    cmd->token[args[0].len] = '\0';
    return true;
}

static proto_cmd_type parse_resume(proto_command *cmd, const command_word *cw,
                                   const word *args, size_t nargs) {
    static const char msg[] =
        "resume takes the 8-character code shown on your race screen";
    if (nargs < 1) return fail(cmd, msg);
    /* A code may be typed in two halves ("K7M2 P9XQ"). */
    const char *from = args[0].p, *to = args[nargs - 1].p + args[nargs - 1].len;
    if (proto_resume_code_parse(from, (size_t)(to - from), cmd->code) == 0 ||
        token_arg(cmd, args, nargs))
        return ok(cmd, cw->type);
    return fail(cmd, msg);
}

/* A game id, with or without a leading '#'. */
static proto_cmd_type parse_game(proto_command *cmd, const command_word *cw,
                                 const word *args, size_t nargs) {
    static const char msg[] = "replay takes a game number (type history)";
    if (nargs != 1 || args[0].len > 15) return fail(cmd, msg);
    uint64_t id = 0;
    for (size_t i = 0; i < args[0].len; i++) {
        char c = args[0].p[i];
        if (i == 0 && c == '#' && args[0].len > 1) continue;
        if (c < '0' || c > '9') return fail(cmd, msg);
        id = id * 10 + (uint64_t)(c - '0');
    }
    cmd->game = id;
    return ok(cmd, cw->type);
}

/* profile [NAME]: a name, or none for one's own. */
static proto_cmd_type parse_profile(proto_command *cmd, const command_word *cw,
                                    const word *args, size_t nargs) {
    if (nargs == 0) return ok(cmd, cw->type);
    return parse_name(cmd, cw, args, nargs) == PROTO_CMD_ERROR
               ? fail(cmd, "profile takes a player's name, or nothing for your own")
               : cmd->type;
}

/* login NAME KEY: the key register showed, 32 hex digits. */
static proto_cmd_type parse_login(proto_command *cmd, const command_word *cw,
                                  const word *args, size_t nargs) {
    static const char msg[] = "login takes your name and the key register gave you: "
                              "login NAME KEY";
    if (nargs != 2 || args[1].len != 32) return fail(cmd, msg);
    if (parse_name(cmd, cw, args, 1) == PROTO_CMD_ERROR) return fail(cmd, msg);
    for (size_t i = 0; i < args[1].len; i++) {
        char c = lower(args[1].p[i]);
        if (proto_hex_digit(c) < 0) {
            memset(cmd->key, 0, sizeof cmd->key);
            return fail(cmd, msg);
        }
        cmd->key[i] = c;
    }
    cmd->key[args[1].len] = '\0';
    return ok(cmd, cw->type);
}

static proto_cmd_type parse_on_off(proto_command *cmd, const command_word *cw,
                                   const word *args, size_t nargs) {
    if (nargs == 1 && word_is(args[0], "on"))
        cmd->on = true;
    else if (nargs != 1 || !word_is(args[0], "off"))
        return fail(cmd, "color takes on or off");
    return ok(cmd, cw->type);
}

/* arena CODE, or arena new MINUTES [PLAYERS]. */
static proto_cmd_type parse_arena(proto_command *cmd, const command_word *cw,
                                  const word *args, size_t nargs) {
    static const char msg[] =
        "arena takes a code (arena AB12CD), or new, minutes (5-240) "
        "and players (2-8): arena new 30 4";
    if (nargs >= 1 && word_is(args[0], "new")) {
        if (nargs < 2 || nargs > 3) return fail(cmd, msg);
        int minutes = number(args[1]);
        int players = nargs > 2 ? number(args[2]) : 0;
        if (minutes < PROTO_ARENA_MINUTES_MIN || minutes > PROTO_ARENA_MINUTES_MAX)
            return fail(cmd, msg);
        if (nargs > 2 && (players < PROTO_PLAYERS_MIN || players > PROTO_PLAYERS_MAX))
            return fail(cmd, msg);
        cmd->number = minutes;
        cmd->size = players;
        return ok(cmd, PROTO_CMD_ARENA_NEW);
    }
    return room_arg(cmd, cw->type, args, nargs, msg);
}

static const command_word command_words[] = {
    {"help", PROTO_CMD_HELP, parse_bare},
    {"rooms", PROTO_CMD_ROOMS, parse_bare},
    {"arenas", PROTO_CMD_ARENAS, parse_bare},
    {"arena", PROTO_CMD_ARENA, parse_arena},
    {"leave", PROTO_CMD_LEAVE, parse_bare},
    {"quit", PROTO_CMD_QUIT, parse_bare},
    {"exit", PROTO_CMD_QUIT, parse_bare},
    {"rematch", PROTO_CMD_REMATCH, parse_bare},
    {"history", PROTO_CMD_HISTORY, parse_bare},
    {"register", PROTO_CMD_REGISTER, parse_bare},
    {"logout", PROTO_CMD_LOGOUT, parse_bare},
    {"top", PROTO_CMD_TOP, parse_top},
    {"daily", PROTO_CMD_DAILY, parse_daily},
    {"profile", PROTO_CMD_PROFILE, parse_profile},
    {"login", PROTO_CMD_LOGIN, parse_login},
    {"name", PROTO_CMD_NAME, parse_name},
    {"solo", PROTO_CMD_SOLO, parse_size},
    {"create", PROTO_CMD_CREATE, parse_create},
    {"quick", PROTO_CMD_QUICK, parse_players},
    {"bot", PROTO_CMD_BOT, parse_level},
    {"join", PROTO_CMD_JOIN, parse_room},
    {"watch", PROTO_CMD_WATCH, parse_room},
    {"resume", PROTO_CMD_RESUME, parse_resume},
    {"replay", PROTO_CMD_REPLAY, parse_game},
    {"color", PROTO_CMD_COLOR, parse_on_off},
    {"colour", PROTO_CMD_COLOR, parse_on_off},
};

bool proto_command_begins(const char *line, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (is_space(line[i])) return true;
    for (size_t i = 0; i < sizeof command_words / sizeof command_words[0]; i++) {
        const char *w = command_words[i].word;
        /* A stuck racer's d is a move dropped, not daily's start: daily is
         * refused in a race anyway. */
        if (command_words[i].type == PROTO_CMD_DAILY) continue;
        if (strlen(w) < len) continue;
        size_t k = 0;
        while (k < len && lower(line[k]) == w[k])
            k++;
        if (k == len) return true;
    }
    return false;
}

proto_cmd_type proto_command_parse(const char *line, size_t len, proto_command *cmd) {
    memset(cmd, 0, sizeof *cmd);
    const char *end = line + len;
    word words[5];
    size_t n = split(line, end, words, 5);
    if (n == 0) return ok(cmd, PROTO_CMD_EMPTY);
    if (parse_moves(line, end, cmd)) return cmd->type;
    /* The parsers see the words kept: more than three after a command is
     * wrong for all of them anyway (a fourth is kept to say so). */
    size_t nargs = (n < 5 ? n : 5) - 1;
    for (size_t i = 0; i < sizeof command_words / sizeof command_words[0]; i++)
        if (word_is(words[0], command_words[i].word))
            return command_words[i].parse(cmd, &command_words[i], &words[1], nargs);
    return unknown(cmd, words[0]);
}

int proto_resume_code_parse(const char *typed, size_t len,
                            char out[PROTO_RESUME_CODE_LEN + 1]) {
    static const char alphabet[] = PROTO_RESUME_ALPHABET;
    char code[PROTO_RESUME_CODE_LEN + 1];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = upper(typed[i]);
        if (c == '-' || is_space(c)) continue;
        if (c == 'I' || c == 'L') c = '1';
        if (c == 'O') c = '0';
        if (c == '\0' || !strchr(alphabet, c) || n == PROTO_RESUME_CODE_LEN) return -1;
        code[n++] = c;
    }
    if (n != PROTO_RESUME_CODE_LEN) return -1;
    code[n] = '\0';
    memcpy(out, code, sizeof code); /* out is untouched on failure */
    return 0;
}

/* Under 50 columns a line, so that it fits a narrow terminal unwrapped. */
const char *proto_command_help(void) {
    return "Commands (type one and press Enter):\r\n"
           "  name NAME     letters A-Z, digits, _ or -\r\n"
           "  solo [SIZE]  alone, 3-8   daily [SIZE] today's\r\n"
           "  quick [N]     race the next who ask (N 2-8)\r\n"
           "  create [N S T] a room: N players, S x S, to T\r\n"
           "  bot [LEVEL]   race a bot now, LEVEL 1-5\r\n"
           "  join|watch CODE  race in or watch a room\r\n"
           "  leave         leave your game, room or queue\r\n"
           "  rematch after a race   rooms   color on|off\r\n"
           "  resume CODE   your seat back after a drop\r\n"
           "  history       ended games; replay ID shows one\r\n"
           "  register      keep your name: gives a key\r\n"
           "  login NAME KEY  with that key   logout\r\n"
           "  top [daily [S]]  best players  profile [NAME]\r\n"
           "  arenas  arena CODE  arena new MIN [N]  quit\r\n"
           "Moves: w a s d, h j k l, up down left right or\r\n"
           "the arrows; a line of them (wasd) plays in turn.\r\n"
           "telnet, in a game: every key plays at once (h\r\n"
           "too); type : first for a command, Esc cancels.\r\n";
}

const char *proto_command_help_in_game(bool char_mode) {
    return char_mode
               ? "In a game type : first, then leave, quit, color off or name NAME; "
                 "help in the lobby lists all."
               : "In a game: leave, quit, color on|off, name NAME; help in the "
                 "lobby lists all.";
}
