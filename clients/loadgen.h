/* loadgen.h - `race2048-bench server`: many JSON clients against a running race2048d. */
#ifndef RACE2048_LOADGEN_H
#define RACE2048_LOADGEN_H

/* Runs the load generator with the arguments after `server` (argv[0] is the
 * first of them, not a program name). Prints one key=value line on stdout.
 * Returns 0; 1 if it cannot connect, the server closes a connection early,
 * a game never starts or the server answers with an error; 2 on a usage
 * error (after printing the usage). */
int loadgen_main(int argc, char **argv);

#endif
