/* analyse.h - race2048-replay --analyse: where did a player lose? The AI's verdict on
 * every move of a finished game. */
#ifndef RACE2048_ANALYSE_H
#define RACE2048_ANALYSE_H

#include <stdio.h>

#include <jansson.h>

/* Writes, for each player of the finished-game record rec, every move as
 * played beside the AI's choice and what the played move gave up (ai/judge.h:
 * percentage points of the chance of reaching the record's target while it is
 * in reach, else the share of the AI's value), then its three biggest
 * mistakes. Returns 0, or 1 (with
 * why on stderr) if the record cannot be re-played. */
int analyse_game(const json_t *rec, FILE *out);

#endif
