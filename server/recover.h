/* recover.h - start-up, above the game: the running games the journal read back are
 * rebuilt through the game's own functions. */
#ifndef RACE2048_RECOVER_H
#define RACE2048_RECOVER_H

#include "journal.h"
#include "game.h"

/* Rebuilds every game of rec as a room whose players wait to resume (grace
 * counted from now), moves the game's id counters past what the record
 * holds, and logs what start-up found. Returns how many games were rebuilt.
 * Call after journal_open, before the server accepts connections. */
size_t recover_games(game *s, const jrn_recovery *rec);

#endif
