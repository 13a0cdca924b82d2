/* crowd.h - an in-process race2048d holding many players and rooms, to measure the
 * server CPU one request costs as the crowd grows (lookups must not scan). */
#ifndef RACE2048_TESTS_CROWD_H
#define RACE2048_TESTS_CROWD_H

#include "srv.h"

/* Builds a server (race2048_server on its own loop, a loopback listener) holding
 * `players` players: the last `racers` (rounded down to even) in running
 * two-player races, the others alone in solo games; every player has lost its connection,
 * so every game keeps its seats for the (long) grace period. One measuring connection
 * stays open. Only one crowd may exist at a time. Returns 0, or -1 (with a
 * message on stderr) if something could not be set up. */
int crowd_build(unsigned players, unsigned racers);

/* Server CPU time per request, in microseconds: `line` (one JSON request)
 * handled `iterations` times on the measuring connection, replies written
 * and read back included. Returns a negative value if the connection closed. */
double crowd_cpu_us(const char *line, int iterations);

/* How many players and rooms the server holds now. */
unsigned crowd_players(void);
unsigned crowd_rooms(void);

/* The server, for direct calls into race2048_server. */
srv *crowd_srv(void);

/* Closes everything; returns 0 if the loop closed cleanly. */
int crowd_free(void);

#endif
