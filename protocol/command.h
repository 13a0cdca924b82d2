/* command.h - one text-mode line (telnet, netcat) parsed into a command or a list of
 * moves. */
#ifndef RACE2048_COMMAND_H
#define RACE2048_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "message.h"

/* Most moves one line may carry; a longer move line is an error. */
#define PROTO_CMD_MOVES_MAX 256

typedef enum proto_cmd_type {
    PROTO_CMD_EMPTY,    /* nothing but whitespace: do nothing */
    PROTO_CMD_ERROR,    /* not understood: send error (a human message) */
    PROTO_CMD_MOVES,    /* moves[0..n_moves) in order */
    PROTO_CMD_HELP,     /* help */
    PROTO_CMD_NAME,     /* name NAME */
    PROTO_CMD_SOLO,     /* solo [SIZE]: number is the size, 0 if absent */
    PROTO_CMD_CREATE,   /* create [PLAYERS [SIZE [TARGET]]]: number is the players,
                           size and target the board; 0 if absent */
    PROTO_CMD_JOIN,     /* join CODE */
    PROTO_CMD_QUICK,    /* quick [PLAYERS]: number is the players, 0 if absent */
    PROTO_CMD_BOT,      /* bot [LEVEL]: a race against one bot; number is the level, 0 if
                           absent */
    PROTO_CMD_WATCH,    /* watch CODE */
    PROTO_CMD_ROOMS,    /* rooms */
    PROTO_CMD_LEAVE,    /* leave */
    PROTO_CMD_QUIT,     /* quit, exit */
    PROTO_CMD_COLOR,    /* color on|off (also colour): on says which */
    PROTO_CMD_REMATCH,  /* rematch */
    PROTO_CMD_RESUME,   /* resume CODE (code set) or resume TOKEN (token set) */
    PROTO_CMD_HISTORY,  /* history: the recently finished games */
    PROTO_CMD_REPLAY,   /* replay ID: play a recorded game back (game set) */
    PROTO_CMD_REGISTER, /* register: the current name becomes an account */
    PROTO_CMD_LOGIN,    /* login NAME KEY: name and key set */
    PROTO_CMD_LOGOUT,   /* logout: a guest again */
    PROTO_CMD_TOP,      /* top: the rating leaderboard */
    PROTO_CMD_PROFILE,  /* profile [NAME]: name set, "" for one's own */
    PROTO_CMD_DAILY,    /* daily [SIZE]: number is the size, 0 if absent */
    /* top daily [SIZE]: today's daily board; number is the size, 0 if absent */
    PROTO_CMD_TOP_DAILY,
    PROTO_CMD_ARENAS,    /* arenas: the arenas list */
    PROTO_CMD_ARENA,     /* arena CODE: enter that arena (room holds the code) */
    PROTO_CMD_ARENA_NEW, /* arena new MINUTES [PLAYERS]: number, size (0 = 4) */
} proto_cmd_type;

/* A human's resume code: PROTO_RESUME_CODE_LEN (message.h) characters of
 * PROTO_RESUME_ALPHABET. */
/* Crockford's base 32: no I, L, O or U; typed I and L read as 1, O as 0. */
#define PROTO_RESUME_ALPHABET "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

/* One parsed line. Only the fields of its type are set. */
typedef struct proto_command {
    proto_cmd_type type;
    int number; /* solo, create, quick, bot: the value, 0 = default */
    int size;   /* create: the board's size, 0 = default; arena new: players, 0 = 4 */
    uint32_t target;                      /* create: the target tile, 0 = default */
    bool on;                              /* color */
    char name[PROTO_NAME_MAX + 1];        /* name: as typed (case kept) */
    char room[PROTO_ROOM_MAX + 1];        /* join, watch: upper-cased */
    char code[PROTO_RESUME_CODE_LEN + 1]; /* resume: the code, normalised */
    char token[PROTO_TOKEN_MAX + 1];      /* resume: a token (hex), as typed */
    char key[PROTO_KEY_MAX + 1];          /* login: the account key, lower-cased */
    uint64_t game;                        /* replay: the game id */
    size_t n_moves;                       /* moves: how many, 1..PROTO_CMD_MOVES_MAX */
    uint8_t moves[PROTO_CMD_MOVES_MAX];   /* moves: eng_dir values, in order */
    char error[128]; /* error: e.g. "unknown command 'foo' - type help" */
} proto_command;

/* Parses one line (without its terminator; it may contain any bytes, NUL
 * included) into *cmd. Command words are case-insensitive and whitespace
 * around words is ignored. A line made only of move letters (w a s d,
 * h j k l, any case), the words up/down/left/right, and arrow-key escape
 * sequences (ESC [ A-D, ESC O A-D), in any mix and with or without spaces,
 * is a list of moves: "wasd" is four moves. Returns cmd->type; a line that
 * is not understood gives PROTO_CMD_ERROR with cmd->error set to a message
 * for the user. Cannot fail otherwise. */
proto_cmd_type proto_command_parse(const char *line, size_t len, proto_command *cmd);

/* True if line[0..len) can still become a command as more is typed: its
 * first word, in any case, begins a command word ("l", "lea" of leave), or
 * the line already has a space (its arguments may be anything). An empty
 * line can. daily, which a racer cannot use, does not count. */
bool proto_command_begins(const char *line, size_t len);

/* The help text: every command with a one-line explanation, lines ending in
 * "\r\n", none wider than 50 columns. A static string. */
const char *proto_command_help(void);

/* The help in a game, one line (no line end): the commands that make sense
 * there, and where the full list is. char_mode: keys play at once, so the
 * commands are typed after ':'. A static string. */
const char *proto_command_help_in_game(bool char_mode);

/* Normalises a typed resume code: upper case, '-' and spaces dropped, I and
 * L read as 1, O as 0. Writes PROTO_RESUME_CODE_LEN characters and a NUL to
 * out and returns 0, or returns -1 (out untouched) if it is not a code. */
int proto_resume_code_parse(const char *typed, size_t len,
                            char out[PROTO_RESUME_CODE_LEN + 1]);

#endif
