/* journal_read.h - the record read back at start-up (inside the record layer): records
 * to the games still running and the finished games' lines, and where a torn tail
 * begins. */
#ifndef RACE2048_JOURNAL_READ_H
#define RACE2048_JOURNAL_READ_H

#include "journal.h"

/* A finished game's record: a line of the data read, with its '\n'. */
typedef struct jread_line {
    uint64_t id;
    const char *line;
    size_t len;
} jread_line;

/* Reads len bytes of journal. Fills rec: the running games (their start
 * records checked; a game that cannot be rebuilt is logged and left out),
 * the counters and the next ids (rec->next_game at least 1). *done gets the
 * finished games in which a board changed, in file order (malloc'd, lines
 * pointing into data). Returns the length up to the end of the last whole
 * valid record: what follows is a torn tail. */
size_t jread_records(const char *data, size_t len, jrn_recovery *rec, jread_line **done,
                     size_t *ndone);

#endif
