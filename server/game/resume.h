/* resume.h - resume codes for humans: derived per seat, indexed, looked up, rate-limited.
 */
#ifndef RACE2048_RESUME_H
#define RACE2048_RESUME_H

#include "game.h"

/* Failed-or-not attempts the whole server accepts per second, so that nobody
 * can try many of the 2^40 codes while a seat waits out its grace period. */
#define RESUME_ATTEMPTS_PER_S 10
/* Of those, what one client address may take (guard.c): a burst of 5 (a
 * connection's tries), then 2 a second, so that one address can never use up
 * the server's attempts and lock everybody else out of their seats. */
#define RESUME_ADDR_BURST 5
#define RESUME_ADDR_PER_S 2

/* A player's code and its place in game.by_resume: a side entry (player.h),
 * since only humans seated in a race have one. */
typedef struct resume_entry {
    srv_player *player;
    char code[PROTO_RESUME_CODE_LEN + 1];
    UT_hash_handle hh; /* in game.by_resume, keyed by code */
} resume_entry;

/* Gives p, seated in a running race, the code of that seat (a digest of its
 * token, the room and the seat, so nobody can work it out from what is
 * shown to others) and indexes it in game.by_resume in place of p's
 * previous code. Leaves p without a code on
 * the 2^-40 chance that another player holds the same one, or if the digest
 * or the index runs out of memory. */
void resume_code_assign(srv_player *p);

/* Takes p's code out of the index; p has none any more. Safe for a player
 * without a code. */
void resume_code_forget(srv_player *p);

/* p's code (PROTO_RESUME_CODE_LEN characters), or "" if it has none. */
const char *resume_code_of(const srv_player *p);

/* The player whose seat has this code (normalised, see
 * proto_resume_code_parse) if that seat is in a running race and within its
 * grace period (disconnected); else NULL. O(1). */
srv_player *resume_code_find(game *g, const char *code);

/* Takes one attempt from the server-wide allowance: returns true if the
 * attempt may go ahead, false if RESUME_ATTEMPTS_PER_S were already made in
 * the last second. */
bool resume_attempt_allowed(game *g);

#endif
