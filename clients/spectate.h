/* spectate.h - `race2048-bench spectators`: the server CPU a move costs per spectator. */
#ifndef RACE2048_SPECTATE_H
#define RACE2048_SPECTATE_H

/* Runs the benchmark with the arguments after `spectators` (argv[0] is the
 * first of them). Starts its own race2048d, prints one key=value line on
 * stdout. Returns 0; 1 if the server or a client fails; 2 on a usage error. */
int spectate_main(int argc, char **argv);

#endif
