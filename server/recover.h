/* recover.h - start-up: reads the journal's records, finds a torn tail, rebuilds the
 * games that were running. */
#ifndef RACE2048_RECOVER_H
#define RACE2048_RECOVER_H

#include "srv.h"

typedef struct recover_stats {
    size_t records;  /* whole records read */
    size_t bad;      /* lines skipped because they were not valid records */
    size_t finished; /* finished-game records */
    size_t restored; /* running games rebuilt */
} recover_stats;

/* Reads len bytes of journal: indexes finished games, rebuilds running ones
 * (their players wait to resume, grace counted from now). Returns the length
 * up to the end of the last whole valid record: what follows is a torn tail. */
size_t recover_journal(srv *s, const char *data, size_t len, recover_stats *st);

#endif
