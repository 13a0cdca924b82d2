/* record.h - a finished game as data: the journal's `game` record, the `history` and
 * `replay` replies made from it, and the record read back. */
#ifndef RACE2048_RECORD_H
#define RACE2048_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "message.h"
#include "seed.h"

/* The most games one `history` reply lists (its `limit`). */
#define PROTO_HISTORY_MAX 100

/* One seat's moves that changed its board: letters u d l r (proto_dir_letter). */
typedef struct proto_seat_moves {
    uint64_t id;
    char *letters; /* malloc'd and owned by the record; NULL when n is 0 */
    size_t n;
} proto_seat_moves;

/* A player of a rated race in the finished record (version 4): its place in
 * the race's ranking (1 is best; equal for a full tie, the last for those who
 * left) and its skill before and after the update, so that anyone can
 * re-compute the update (race2048-replay does). Guests and bots are listed
 * too: they take part in the update and keep nothing. */
typedef struct proto_record_rating {
    uint64_t id;
    int place;
    double mu0, sigma0; /* before */
    double mu, sigma;   /* after */
} proto_record_rating;

/* A seat logged in to an account (version 4): the account's name. */
typedef struct proto_record_account {
    uint64_t id;
    char name[PROTO_NAME_MAX + 1];
} proto_record_account;

/* A finished game: what the journal's `game` record, a `history` entry and a
 * `replay` reply say, in one struct. */
typedef struct proto_game_record {
    uint64_t game;
    char room[PROTO_ROOM_MAX + 1]; /* "" for a solo game: no "room" member */
    proto_end_reason reason;
    uint64_t winner; /* 0: "winner":null */
    int nresults;
    proto_result results[PROTO_PLAYERS_MAX]; /* ranked, best first (message.h) */
    eng_seed seed;
    char salt[PROTO_SALT_TEXT];
    char commit[PROTO_COMMIT_TEXT];
    int size;
    uint32_t target, time_limit;
    int64_t started, ended; /* Unix ms */
    int nseats;
    proto_seat_moves seats[PROTO_PLAYERS_MAX]; /* in seat (join) order */
    /* Version 4: the seats of accounts ("accounts" member, absent if none) and,
     * for a rated race, every player's update ("ratings", in results order). */
    int naccounts;
    proto_record_account accounts[PROTO_PLAYERS_MAX];
    int nratings;
    proto_record_rating ratings[PROTO_PLAYERS_MAX];
} proto_game_record;

/* Encoders: one line ending in '\n', malloc'd, its length in *len; NULL if
 * memory runs out. Byte-for-byte what the server has always written. */

/* The journal's line: {"j":"game","game":ID,<end's members>,"commit":...,"moves":{...}}.
 */
char *proto_enc_game_record(const proto_game_record *g, size_t *len);
/* {"type":"history","games":[each record without "moves"]}: games newest first. */
char *proto_enc_history(const proto_game_record *const *games, int n, size_t *len);
/* {"type":"replay", then the record's members with "moves"}. */
char *proto_enc_replay(const proto_game_record *g, size_t *len);

/* Reads a `game` record (one line, with or without its newline; also a
 * `replay` reply, whose "type" is skipped) into *out, which then owns its
 * seats' letters (proto_game_record_clear). Returns 0, or -1 (*out holds
 * nothing to free) if it is not a record the server writes. */
int proto_dec_game_record(const char *line, size_t len, proto_game_record *out);
/* Frees the seats' letters; the record may be filled again. */
void proto_game_record_clear(proto_game_record *g);

/* True if a board changed (some seat has a move): unplayed games are kept in
 * the file but not listed by `history`. */
bool proto_game_record_played(const proto_game_record *g);

#endif
