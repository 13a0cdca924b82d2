/* bench_accounts.h - race2048-bench accounts: a million accounts in memory, and what a
 * leaderboard, a profile and a rating update cost among them. */
#ifndef RACE2048_BENCH_ACCOUNTS_H
#define RACE2048_BENCH_ACCOUNTS_H

/* The subcommand: arguments after its name; returns the exit status. */
int bench_accounts_main(int argc, char **argv);

#endif
