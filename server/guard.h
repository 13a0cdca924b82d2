/* guard.h - brakes on guessing resume tokens: failed resumes are limited per
 * connection and per client address, and logged without flooding the log. */
#ifndef RACE2048_GUARD_H
#define RACE2048_GUARD_H

#include "conn.h"

/* Defaults for srv_config (main.c); a zero there turns that limit off. */
#define GUARD_RESUME_TRIES                                                               \
    5 /* failed resumes a connection may make, then it is closed                         \
       */
#define GUARD_RESUME_BURST   20 /* failed resumes an address may make at once... */
#define GUARD_RESUME_PER_MIN 60 /* ...and then this many a minute */

typedef enum guard_verdict {
    GUARD_OK,        /* look the token up */
    GUARD_THROTTLED, /* the address failed too often: refuse without looking */
} guard_verdict;

/* May c try a resume now? Constant time. */
guard_verdict guard_resume_check(conn *c);
/* c's resume failed (or was refused): counts it for c and its address.
 * Returns true when c has used up its tries and must be closed. If memory
 * runs out the address is not tracked (the per-connection limit still holds). */
bool guard_resume_failed(conn *c);

/* Forgets every failed resume (server shutdown): the address table keeps
 * only entries of open connections. */
void guard_free(srv *s);

#endif
