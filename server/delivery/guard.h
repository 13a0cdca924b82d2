/* guard.h - per-address brakes: failed resumes (guessed tokens and codes) and games
 * started are limited per connection and per client address, and logged without
 * flooding the log. */
#ifndef RACE2048_GUARD_H
#define RACE2048_GUARD_H

#include "conn.h"

/* Defaults for srv_config (main.c); a zero there turns that limit off. */
#define GUARD_RESUME_TRIES                                                               \
    5 /* failed resumes a connection may make, then it is closed                         \
       */
#define GUARD_RESUME_BURST   20  /* failed resumes an address may make at once... */
#define GUARD_RESUME_PER_MIN 60  /* ...and then this many a minute */
#define GUARD_GAMES_PER_MIN  120 /* games an address may start at once, then a minute */
/* Accounts an address may register an hour (the contract's limit). */
#define GUARD_REGISTER_PER_HOUR 10

typedef enum guard_verdict {
    GUARD_OK,          /* look the token (or code) up */
    GUARD_THROTTLED,   /* the address failed too often: refuse without looking */
    GUARD_ADDR_BUSY,   /* codes: the address has used up its share for now */
    GUARD_SERVER_BUSY, /* codes: the whole server's attempts of this second are used */
} guard_verdict;

/* May c try a resume now? Constant time. */
guard_verdict guard_resume_check(conn *c);
/* May c try a resume code now? In this order: its address is not throttled,
 * has not used up its share (RESUME_ADDR_BURST, RESUME_ADDR_PER_S), and
 * the whole server has attempts left this second (resume.h). Only an attempt
 * that passes all three spends anything of the server-wide budget, so one
 * address can never use it up. Every refusal must be counted as a failure
 * (guard_resume_failed). Constant time. */
guard_verdict guard_code_check(conn *c);
/* c's resume failed (or was refused): counts it for c and its address.
 * Returns true when c has used up its tries and must be closed. If memory
 * runs out the address is not tracked (the per-connection limit still holds). */
bool guard_resume_failed(conn *c);

/* c asks to start a game (solo, create, quick, rematch): takes one of its
 * address's --max-games-per-min and returns 0, or returns how many seconds
 * (at least 1) the address must wait before it may start one. If memory runs
 * out the address is not limited. Constant time. */
unsigned guard_game_start(conn *c);

/* c asks to register an account: 0 if its address may (nothing is spent: call
 * guard_registered once it did), else how many seconds (at least 1) until
 * it may. Constant time. */
unsigned guard_register_check(conn *c);
/* c registered an account: one of its address's GUARD_REGISTER_PER_HOUR. */
void guard_registered(conn *c);

/* Forgets every failed resume and game (server shutdown): the address table keeps
 * only entries of open connections. */
void guard_free(srv *s);

#endif
