/* seed.h - a game's seed on the wire: end.seed as JSON, and the commit to it. */
#ifndef RACE2048_SEED_H
#define RACE2048_SEED_H

#include <jansson.h>

#include "engine.h"

/* A salt is 32 lowercase hex digits; a commit 64. Sizes include the NUL. */
#define PROTO_SALT_TEXT   33
#define PROTO_COMMIT_TEXT 65

/* end.seed: a JSON string of 64 hex digits for a server seed, a JSON
 * number for a client seed. Returns a new reference, or NULL if memory runs
 * out. */
json_t *proto_seed_json(const eng_seed *seed);

/* Reads end.seed back, by the same rule: a 64-hex-digit string is a server
 * seed, an integer 0..2^32-1 a client seed. Returns 0, or -1 (*out
 * untouched) for anything else, including a number written as a string. */
int proto_seed_from_json(const json_t *v, eng_seed *out);

/* out = SHA-256 of "SALT:SEED" (SEED as end writes it) as 64 lowercase hex
 * digits and a NUL, the start message's commit. Returns 0, or -1 (out is
 * the empty string) if salt is too long or libcrypto fails. */
int proto_commit(const char *salt, const eng_seed *seed, char out[PROTO_COMMIT_TEXT]);

#endif
