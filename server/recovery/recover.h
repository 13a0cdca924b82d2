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
/* Takeover: rebuilds the running games of another incarnation's records
 * (rec from jread_records) the same way, each written into this node's
 * journal as new records (its start, its moves, its seats that left), its
 * players' grace counted from now. The id counters do not move (the ids
 * are the other node's). Games that run here already are skipped. Returns
 * how many were rebuilt. */
size_t recover_adopt(game *s, const jrn_recovery *rec);

#endif
