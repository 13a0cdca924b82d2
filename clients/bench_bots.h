/* bench_bots.h - race2048-bench bots: the bot levels' strength, speed and races. */
#ifndef RACE2048_BENCH_BOTS_H
#define RACE2048_BENCH_BOTS_H

/* Runs the benchmark with the arguments after `bots`; returns the exit status
 * (0, 1 if memory ran out, 2 for a bad argument). */
int bench_bots_main(int argc, char **argv);

#endif
