/* replay_show.h - race2048-replay's output: strings from a file made safe for a terminal,
 * and a recorded game stepped frame by frame in time linear in its moves. */
#ifndef RACE2048_REPLAY_SHOW_H
#define RACE2048_REPLAY_SHOW_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine.h"
#include "message.h"

/* A file is anyone's: what race2048-replay prints from it never reaches the
 * terminal as a control byte. Copies in to out (cap bytes, always
 * terminated, cut at a whole escape) with C0 bytes, DEL and C1 characters
 * (U+0080..U+009F, two bytes in UTF-8; a lone byte 0x80..0x9F too) written
 * as \xHH; everything else is kept. Returns the length the whole escaped
 * text takes (as snprintf does). */
size_t replay_escape(const char *in, char *out, size_t cap);
/* Every string value in v, however deep, escaped in place (object keys are
 * looked up, never printed). 0, or -1 if memory ran out. */
int replay_escape_json(json_t *v);

/* A recorded game played forward: frame 0 is the start, frame k each
 * player's k-th move (a player out of moves stays as it is). The moves are
 * given with their lengths and need no terminating NUL: no frame looks at
 * more than the next letter of each player. */
typedef struct replay_frames {
    int n;
    const char *moves[PROTO_PLAYERS_MAX];
    size_t len[PROTO_PLAYERS_MAX];
    size_t longest; /* the last frame */
    size_t step;    /* the frame shown now */
    eng_game games[PROTO_PLAYERS_MAX];
} replay_frames;

/* Frame 0 of n players' games of size `size` from seed. 0, or -1 (bad size
 * or n). */
int replay_frames_init(replay_frames *f, int n, const char *const *moves,
                       const size_t *lens, int size, const eng_seed *seed);
/* Goes to the next frame; returns how many letters it read (at most n), or
 * 0 at the last frame. A letter that is not a move is skipped. */
size_t replay_frames_next(replay_frames *f);

#endif
