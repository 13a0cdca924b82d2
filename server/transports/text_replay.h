/* text_replay.h - text mode's look at the record: the history list, and a finished game
 * played back move by move like a race being watched. */
#ifndef RACE2048_TEXT_REPLAY_H
#define RACE2048_TEXT_REPLAY_H

#include "record.h"
#include "render.h"

/* Pace of a replay: ms between frames, from fastest to slowest. */
#define TEXT_REPLAY_MS_MIN     50
#define TEXT_REPLAY_MS_DEFAULT 400
#define TEXT_REPLAY_MS_MAX     3200

typedef struct text_replay text_replay;

/* Appends the n games (most recent first), each as lines wrapped at words to
 * width: id, room, players and scores, winner, when; with rows >= 0, only
 * the games that fit whole in that many lines (rows < 0: no limit). Returns
 * how many games it listed (0: none, or none fit), or -1 if memory ran out. */
int text_replay_history(const proto_game_record *const *games, int n, proto_buf *b,
                        int width, int rows);

/* The same list in two steps, for a list that came from other nodes (and
 * is kept while the screen shows it): each game as one line, unwrapped
 * (entry holds TEXT_HISTORY_ENTRY bytes), then those lines wrapped as above. */
#define TEXT_HISTORY_ENTRY 320
void text_replay_history_entry(const proto_game_record *g, char *entry);
int text_replay_history_lines(const char (*entries)[TEXT_HISTORY_ENTRY], int n,
                              proto_buf *b, int width, int rows);

/* Makes a playback of finished game g (the record is copied); NULL with *why
 * set to a message for the user if g is NULL (no such game) or cannot be
 * played back (or memory ran out). */
text_replay *text_replay_open(const proto_game_record *g, const char **why);
void text_replay_free(text_replay *t);

/* Advances one frame: every player's next move. Returns false (nothing
 * changed) once the last move has been shown. */
bool text_replay_step(text_replay *t);
bool text_replay_done(const text_replay *t);

/* Pace: faster (dir > 0) or slower (dir < 0); returns the new ms. */
int text_replay_pace(text_replay *t, int dir);
int text_replay_ms(const text_replay *t);

/* The current frame: the boards as a spectator sees them, then status. */
int text_replay_render(const text_replay *t, proto_buf *b, int width, int height,
                       proto_color color, const char *status, const char *hint);

/* "Replay of game 7: move 12 of 240" and, at the end, the recorded verdict. */
void text_replay_caption(const text_replay *t, char *out, size_t n);

#endif
