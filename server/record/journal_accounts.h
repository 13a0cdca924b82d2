/* journal_accounts.h - accounts in the record: the `account` record (at register and,
 * one per account, at compaction) and, at start-up, the accounts and their ratings
 * rebuilt from the journal in its order. */
#ifndef RACE2048_JOURNAL_ACCOUNTS_H
#define RACE2048_JOURNAL_ACCOUNTS_H

#include <stddef.h>

#include "accounts.h"
#include "record.h"

/* The `account` record of a, one line with its '\n' (malloc'd, its length in
 * *len), or NULL if memory runs out. It holds the name, salt and key hash,
 * never the key. */
char *jacct_record(const acct_account *a, size_t *len);
/* The same from a snapshot (cluster mode: an account's value in NATS KV). */
char *jacct_snapshot_record(const acct_snapshot *snap, size_t *len);
/* An `account` record (one line, with or without its '\n') into *snap: 0, or -1
 * if it is not one the server writes (nothing checked against a table). */
int jacct_parse(const char *line, size_t len, acct_snapshot *snap);

/* A finished game's effect on its accounts: a rated race's new skills (absolute
 * values: set, not added), the race counted and its win; the game in each
 * account's recent games, and a solo game with a server seed offered as the
 * size's best. Accounts the store does not have are skipped (a compaction
 * writes the accounts after the finished games it keeps), and so are those
 * that have the game among their recent games already (a compaction copies
 * the accounts over a few loop turns, so one copied late may hold a game
 * whose record follows the accounts' records). */
void jacct_apply_game(acct_store *s, const proto_game_record *g);

/* Start-up: applies the journal's records to s in file order: `account`
 * records create or replace an account, finished games with accounts go
 * through jacct_apply_game. data is the journal up to its last whole record.
 * Returns how many records were applied; a bad one is logged and skipped. */
size_t jacct_replay(acct_store *s, const char *data, size_t len);

#endif
