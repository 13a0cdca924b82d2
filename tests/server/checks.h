/* checks.h - protocol facts the server tests check on many messages: player objects,
 * seed commitments, rankings, and boards replayed with the engine. */
#ifndef RACE2048_TESTS_CHECKS_H
#define RACE2048_TESTS_CHECKS_H

#include <stdint.h>

#include <jansson.h>

#include "engine.h"

/* A player object of protocol/README.md on a size x size board: fields, types, a
 * max_tile that is the board's largest tile, a known status. Fails otherwise. */
void check_player(const json_t *p, int size);
/* check_player on every element of a start's, room's or end's list. */
void check_players(const json_t *list, int size);

/* An `end`'s seed: a string of 64 lowercase hex digits is a server seed
 * (ChaCha20), an integer 0..2^32-1 a client seed (mulberry32). Fails on
 * anything else. */
eng_seed check_end_seed(const json_t *end);

/* The commit of a `start` matches SHA-256("SALT:SEED") from the `end` (SEED as
 * end writes it), and both are lowercase hex of the right length. */
void check_commit(const char *commit, const json_t *end);

/* The `end` of a race: results best first by the rule for its reason (left
 * last, score, max tile, fewer moves), and the winner the first unless a full
 * tie or everyone left (null). */
void check_ranking(const json_t *end);

/* Fails unless the JSON board is exactly b. */
void check_board(const json_t *board, const eng_board *b);

/* Replays, from the seed `end` reveals (with the generator its kind says),
 * the moves player id made: the `dir` of each moved `state` about it in
 * `states` (other objects are skipped). Every board, spawn, score and move
 * count on the way must match, and so must its entry in the end's results. */
void check_replay(const json_t *end, json_int_t id, const json_t *states, int size);

/* A JSON dir name to the engine's. */
eng_dir dir_of(const char *name);

/* A start's board (from its players[0]) as an engine board. */
void board_of_json(const json_t *board, eng_board *out);

#endif
