/* bench_ai.h - `race2048-bench ai`: the AI's strength and speed, offline, on seeded
 * games. */
#ifndef RACE2048_BENCH_AI_H
#define RACE2048_BENCH_AI_H

/* Runs the benchmark with the arguments after `ai`; returns the exit status. */
int bench_ai_main(int argc, char **argv);

#endif
