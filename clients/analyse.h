/* analyse.h - race2048-replay --analyse: where did a player lose? The AI's verdict on
 * every move of a finished game. */
#ifndef RACE2048_ANALYSE_H
#define RACE2048_ANALYSE_H

#include <stdio.h>

#include <jansson.h>

/* Writes, for each player of the finished-game record rec, every move as
 * played beside the AI's choice and the share of the position's value the
 * played move gave up, then its three biggest mistakes. Returns 0, or 1 (with
 * why on stderr) if the record cannot be re-played. */
int analyse_game(const json_t *rec, FILE *out);

#endif
