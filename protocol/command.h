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
    PROTO_CMD_EMPTY,   /* nothing but whitespace: do nothing */
    PROTO_CMD_ERROR,   /* not understood: send error (a human message) */
    PROTO_CMD_MOVES,   /* moves[0..n_moves) in order */
    PROTO_CMD_HELP,    /* help */
    PROTO_CMD_NAME,    /* name NAME */
    PROTO_CMD_SOLO,    /* solo [SIZE]: number is the size, 0 if absent */
    PROTO_CMD_CREATE,  /* create [PLAYERS]: number is the players, 0 if absent */
    PROTO_CMD_JOIN,    /* join CODE */
    PROTO_CMD_QUICK,   /* quick [PLAYERS]: number is the players, 0 if absent */
    PROTO_CMD_WATCH,   /* watch CODE */
    PROTO_CMD_ROOMS,   /* rooms */
    PROTO_CMD_LEAVE,   /* leave */
    PROTO_CMD_QUIT,    /* quit, exit */
    PROTO_CMD_COLOR,   /* color on|off (also colour): on says which */
    PROTO_CMD_REMATCH, /* rematch */
} proto_cmd_type;

/* One parsed line. Only the fields of its type are set. */
typedef struct proto_command {
    proto_cmd_type type;
    int number;                         /* solo, create, quick: the value, 0 = default */
    bool on;                            /* color */
    char name[PROTO_NAME_MAX + 1];      /* name: as typed (case kept) */
    char room[PROTO_ROOM_MAX + 1];      /* join, watch: upper-cased */
    size_t n_moves;                     /* moves: how many, 1..PROTO_CMD_MOVES_MAX */
    uint8_t moves[PROTO_CMD_MOVES_MAX]; /* moves: eng_dir values, in order */
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

/* The help text: every command with a one-line explanation, lines ending in
 * "\r\n". A static string. */
const char *proto_command_help(void);

#endif
