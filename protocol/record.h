/* record.h - the journal's format, every record kind written and read here: a finished
 * game as data (the `game` record, the `history` and `replay` replies made from it),
 * and the records of running games, daily seeds and compaction (record_journal.c). */
#ifndef RACE2048_RECORD_H
#define RACE2048_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "byte_buf.h"
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

/* ------------------------------------------------ the journal's records --- */

/* Every record is one JSON object on one line, {"j":"KIND",...}\n
 * (protocol/README.md's journal file). Writers append the line with its
 * '\n' to b and return 0, or -1 if memory ran out (b may then hold part of
 * it: the caller drops b). Every string is escaped as jansson escapes it;
 * readers take any JSON spelling of a record (the parser), and the exact
 * spelling the writers make without one (start-up speed). */

typedef enum proto_rec_kind {
    PROTO_REC_OTHER, /* another kind (account, daily, rematch, a later version's) */
    PROTO_REC_GAME,
    PROTO_REC_START,
    PROTO_REC_MOVES,
    PROTO_REC_SEAT,
    PROTO_REC_HEAD, /* proto_rec_kind_parse only */
    PROTO_REC_BAD,  /* proto_rec_kind_parse only: not an object with a "j" */
} proto_rec_kind;

/* The kind of a record about one game whose head is {"j":"KIND","game":ID,
 * as the writers spell it and ending in '}', and ID; no parser: anything
 * else is PROTO_REC_OTHER (game 0). */
proto_rec_kind proto_rec_kind_of(const char *line, size_t len, uint64_t *game);
/* As proto_rec_kind_of, and what that does not recognise through the parser
 * ("game" then as the parser reads it, 0 if missing). */
proto_rec_kind proto_rec_kind_parse(const char *line, size_t len, uint64_t *game);
/* True if line's "j" is kind (e.g. "daily"), as the writers spell the head. */
bool proto_rec_is(const char *line, size_t len, const char *kind);

/* A seat of a `start` record. */
typedef struct proto_start_seat {
    uint64_t id;
    char name[PROTO_NAME_MAX + 1];
    char token_hash[65];              /* SHA-256 of the resume token in hex, or "" */
    uint8_t bot_level;                /* a server-run bot's level (1-5), 0 for a person */
    char account[PROTO_NAME_MAX + 1]; /* the account it plays for, or "" */
} proto_start_seat;

/* A game starts (the `start` record). */
typedef struct proto_start_record {
    uint64_t game;
    bool solo;
    char room[PROTO_ROOM_MAX + 1]; /* "" for a solo game: no "room" member */
    proto_settings settings;       /* size, target, time_limit, rated */
    eng_seed seed;
    char salt[PROTO_SALT_TEXT];
    char commit[PROTO_COMMIT_TEXT];
    int nseats;
    proto_start_seat seats[PROTO_PLAYERS_MAX]; /* in seat order */
    int64_t started_ms;                        /* Unix ms */
    bool daily;                                /* a daily game (the record's "daily") */
    int32_t daily_day;                         /* its day, from 1970-01-01 */
    /* An arena's race: settings.arena is the arena's code ("arena") and this
     * its race number there ("arena_race"); 0 and "" else (older records). */
    uint64_t arena_race;
} proto_start_record;

int proto_rec_put_start(byte_buf *b, const proto_start_record *st);
/* Reads a `start` record into *out: 0, or -1 if it is not one (no object, no
 * seats array, more than PROTO_PLAYERS_MAX seats, a bad seed). Members that
 * are missing or do not fit are left zero or "" (the caller judges them);
 * settings.players is the number of seats. */
int proto_dec_start_record(const char *line, size_t len, proto_start_record *out);
/* The game and seat ids of a `start` record as the writers spell it, without
 * a parser: 0, or -1 (then use proto_dec_start_record). */
int proto_scan_start_ids(const char *line, size_t len, uint64_t *game,
                         uint64_t ids[PROTO_PLAYERS_MAX], int *nseats);

/* One seat's moves in a `moves` record: letters u d l r. */
typedef struct proto_moves_part {
    uint64_t id;
    const char *letters;
    size_t n;
} proto_moves_part;

/* {"j":"moves","game":G,"m":{"ID":"LETTERS",...}}: parts with n 0 are left out. */
int proto_rec_put_moves(byte_buf *b, uint64_t game, const proto_moves_part *parts,
                        int nparts);
/* Reads a `moves` record: 0, or -1 if it is not one (a letter other than u d
 * l r, more than PROTO_PLAYERS_MAX seats). The letters point into line, or,
 * when it had to be parsed, into *owned (malloc'd; free it, NULL otherwise). */
int proto_dec_moves_record(const char *line, size_t len, uint64_t *game,
                           proto_moves_part parts[PROTO_PLAYERS_MAX], int *nparts,
                           char **owned);

/* {"j":"seat","game":G,"id":ID,"event":"EVENT"} */
int proto_rec_put_seat(byte_buf *b, uint64_t game, uint64_t id, const char *event);
/* Reads a `seat` record (event: "left", "over", ...): 0, or -1. */
int proto_dec_seat_record(const char *line, size_t len, uint64_t *game, uint64_t *id,
                          char event[16]);

/* {"j":"rematch","game":G,"room":"CODE"} (read by nothing but people). */
int proto_rec_put_rematch(byte_buf *b, uint64_t game, const char *room);

/* A compacted journal's first record: the next ids, so that none repeats. */
int proto_rec_put_head(byte_buf *b, uint64_t next_game, uint64_t next_id,
                       int64_t compacted_ms);
/* Reads a `head` record (missing members are 0): 0, or -1. */
int proto_dec_head_record(const char *line, size_t len, uint64_t *next_game,
                          uint64_t *next_id);

/* The daily challenge's seed of a day and size (`daily`). */
typedef struct proto_daily_record {
    int32_t day; /* from 1970-01-01 */
    int size;
    eng_seed seed; /* a server seed */
    char salt[PROTO_SALT_TEXT];
} proto_daily_record;
int proto_rec_put_daily(byte_buf *b, const proto_daily_record *d);
/* 0, or -1 if it is not a `daily` record with a day, a size, a server seed
 * and a salt of 32 characters. */
int proto_dec_daily_record(const char *line, size_t len, proto_daily_record *out);

/* An account began its daily game of a day and size, or finished it
 * (`daily_entry`). */
typedef struct proto_daily_entry_record {
    int32_t day;
    int size;
    char name[PROTO_NAME_MAX + 1]; /* the account */
    bool finished;                 /* the members below are written */
    uint32_t score, max_tile, moves;
    int64_t end_ms;
    uint64_t game;
} proto_daily_entry_record;
int proto_rec_put_daily_entry(byte_buf *b, const proto_daily_entry_record *e);
/* 0, or -1 if it is not a `daily_entry` record with a day (0..INT32_MAX), a
 * size and a name. */
int proto_dec_daily_entry_record(const char *line, size_t len,
                                 proto_daily_entry_record *out);

/* A JSON string, quoted and escaped as every record's strings are (for the
 * records written elsewhere: journal_accounts.c's `account`): 0, or -1. */
int proto_rec_put_string(byte_buf *b, const char *s);

/* True if a finished-game record's "moves" member (written last) holds a
 * move, read without a parser; false for a record without one. */
bool proto_rec_game_played(const char *line, size_t len);

/* ---------------------------------------------- arenas (record_arena.c) --- */

/* One entrant of an `arena` record, as the arena module's snapshot has it. */
typedef struct proto_arena_rec_entrant {
    uint64_t id;
    char name[PROTO_NAME_MAX + 1];
    int64_t points;
    int races, wins, streak;
    int state; /* 0 away, 1 waiting, 2 racing */
    bool sent_away;
    int64_t since_ms;
    uint64_t race;
    int race_entrants;
} proto_arena_rec_entrant;

/* An entrant to put back in the pool when it comes back after a restart: it
 * was waiting (or racing, to wait again after its race) when the record was
 * written. Its client proves who it is by `resume` with its token (kept only
 * as the token's SHA-256) or by `hello` with its account's key. */
typedef struct proto_arena_rec_back {
    uint64_t id;
    char token_hash[65];              /* 64 hex digits, or "" if not known */
    char account[PROTO_NAME_MAX + 1]; /* its account's name, or "" for a guest */
} proto_arena_rec_back;

/* An arena's whole state: {"j":"arena","arena":CODE,...,"entrants":[[...],...]}.
 * The last record of a code is its state (one module owns the format). */
typedef struct proto_arena_record {
    char code[PROTO_ROOM_MAX + 1];
    char name[PROTO_ARENA_NAME_MAX + 1];
    int players, size;
    uint32_t target;
    int64_t starts_ms, ends_ms, pair_wait_ms, bots_wait_ms;
    uint64_t max_entrants, next_race;
    bool finished;
    int64_t finished_ms;
    size_t count;
    proto_arena_rec_entrant *entrants; /* count of them; decode mallocs them */
    size_t nback;                      /* "back" (absent in older records: none) */
    proto_arena_rec_back *back;        /* nback of them; decode mallocs them */
} proto_arena_record;

/* What happened in an arena since its last `arena` record, one `arena_ev`
 * record each: {"j":"arena_ev","arena":CODE,"ev":KIND,...}. Replayed in order
 * on the last `arena` record they rebuild the arena exactly, so that each
 * race costs a record of its own size, not the whole standings. */
typedef enum proto_arena_ev_kind {
    PROTO_ARENA_EV_IN,      /* entrant id (name) joined or is back: back.* */
    PROTO_ARENA_EV_OUT,     /* entrant id left the pool (left, gone, busy) */
    PROTO_ARENA_EV_FORM,    /* race formed of ids (standing order) */
    PROTO_ARENA_EV_RACE,    /* race's result: players, places of ids, at */
    PROTO_ARENA_EV_ABANDON, /* race given up: its ids, at */
} proto_arena_ev_kind;

typedef struct proto_arena_event {
    char code[PROTO_ROOM_MAX + 1];
    proto_arena_ev_kind kind;
    char name[PROTO_NAME_MAX + 1]; /* in */
    proto_arena_rec_back back;     /* in: id, token hash, account; out: id */
    uint64_t race;                 /* form, race, abandon */
    int players;                   /* race: P', bots included, 2..8 */
    int64_t at_ms;                 /* in, race, abandon */
    int n;                         /* form, race, abandon: entrants, 1..8 */
    uint64_t ids[8];
    int places[8]; /* race: 1..players */
    bool left[8];  /* race */
} proto_arena_event;

/* Appends the event's line to b: 0, or -1 if memory ran out. */
int proto_rec_put_arena_event(byte_buf *b, const proto_arena_event *e);
/* Reads an `arena_ev` record: 0, or -1 if it is not a valid one. */
int proto_dec_arena_event(const char *line, size_t len, proto_arena_event *out);

/* Appends the record's line to b: 0, or -1 if memory ran out. */
int proto_rec_put_arena(byte_buf *b, const proto_arena_record *a);
/* Reads an `arena` record: 0 (free out->entrants and out->back), or -1 if it
 * is not one. */
int proto_dec_arena_record(const char *line, size_t len, proto_arena_record *out);
/* The code of an `arena` or `arena_ev` record, read without decoding the
 * entrants: 0, or -1. */
int proto_arena_record_code(const char *line, size_t len, char code[PROTO_ROOM_MAX + 1]);

#endif
