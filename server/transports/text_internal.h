/* text_internal.h - what text mode's files share: the session, its limits, and the
 * functions one file calls in another. */
#ifndef RACE2048_TEXT_INTERNAL_H
#define RACE2048_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "command.h"
#include "render.h"
#include "telnet.h"
#include "text.h"
#include "text_replay.h"
#include "view.h"

/* How long the probe's answer may take before the greeting. */
#define GREET_WAIT_MS 500
/* Once telnet answers, the rest of its answer (window size) follows at once. */
#define GREET_SETTLE_MS 30
/* At most one redraw per this many ms, so a fast bot cannot flood a terminal. */
#define REDRAW_MS 50
/* An Esc with nothing after it this long is a lone Esc, not an arrow key. */
#define ESC_MS 80
/* What a terminal that reports no size (netcat) is assumed to have. */
#define DEFAULT_COLS 80
#define DEFAULT_ROWS 24

/* The screen a session shows when no race is on screen. A running room's
 * boards (text_shown) come before it: the room sends them, and the session
 * returns to its screen once they are gone. Sessions start zeroed: in the
 * lobby. Only text_set_screen, text_show_end and text_show_replay change it,
 * asserting the move is one text_screen_moves allows. */
typedef enum text_screen {
    TEXT_LOBBY = 0,     /* the lobby: the command list, or an account screen */
    TEXT_HELP,          /* the lobby with every command (help) */
    TEXT_HISTORY,       /* the lobby with the games that ended lately (history) */
    TEXT_END,           /* a race's end screen: end holds the view of its `end` */
    TEXT_REPLAY,        /* a finished game played back (replay), a frame at replay_at */
    TEXT_REPLAY_PAUSED, /* ... paused */
    TEXT_CLOSING,       /* quit: its last line is said; nothing shows any more */
    TEXT_SCREENS
} text_screen;

/* One human's text mode. Besides the screen, a few flags are kept, each
 * independent of the screen and of each other:
 * - greeted: the greeting has been drawn (redraws happen only after it); a
 *   line typed before it (netcat piping commands) already picks the screen
 *   the greeting shows, so it is not a screen of its own;
 * - any_command: a line was typed (a late '{' line is then not a JSON
 *   client), whatever the screen;
 * - prompt: the command line is open in character mode, over a race, a
 *   replay or the lobby alike (line editing, not a screen);
 * - named: the status already says the new name (about the status line);
 * - resuming, logging_out, history_asked (and replay_asked): a reply is
 *   awaited; other commands may come meanwhile and change the screen;
 * - end_now: the `end` came in reply to the request being handled (about
 *   the order of messages: a leave that ended the race keeps its end screen);
 * - dirty: a redraw is due (pacing). */
typedef struct text_session {
    proto_telnet tn;
    proto_keys keys;
    /* The state and the flags, together (the session stays small). */
    bool greeted;
    text_screen screen;
    proto_color color;
    bool any_command;   /* a line was typed: a '{' line is no longer a late JSON client */
    bool prompt;        /* in a game, ':' opened the command line */
    bool named;         /* the status says the new name: the lobby need not */
    bool resuming;      /* a resume was asked: its `start` keeps the status */
    bool logging_out;   /* logout was asked: its `welcome` says so */
    bool dirty;         /* a redraw is due at draw_at */
    bool end_now;       /* the `end` came in reply to the request being handled */
    bool history_asked; /* see history below */
    proto_end_reason end_reason; /* see end below */
    char line[128];              /* the command line being typed in character mode */
    size_t line_len;
    char status[192]; /* what just happened, shown under the boards */
    /* The lobby shows an account screen (register's key, top, profile), made
     * from the reply; freed at the next command, so a key is shown once. */
    char *account_screen;
    /* The room it is in or watches, as the last message about it showed it
     * (a reference); NULL in the lobby. Text mode reads no room. */
    srv_view *view;
    char resume_code[PROTO_RESUME_CODE_LEN + 1]; /* its seat's, from its `start` */
    /* Deadlines in loop time (ms), 0 = none; one timer serves them all.
     * tick_at: a grace countdown on screen changes its second. */
    uint64_t greet_at, draw_at, esc_at, tick_at;
    uint64_t last_draw;
    /* TEXT_END: the view the `end` carried (a reference, held exactly while
     * the end screen shows: it outlives the room of a solo game), with the
     * message's reason (end_reason) and winner, which its view does not hold. */
    srv_view *end;
    uint64_t end_winner;
    /* In cluster mode the history list and a replayed game come from every
     * node, as JSON's do: asked (history_asked, replay_asked: the id) and
     * shown when the answer comes; the list is kept (history) while the
     * screen shows it. */
    uint64_t replay_asked;
    struct text_history *history;
    /* TEXT_REPLAY and TEXT_REPLAY_PAUSED: the playback (text_replay.c),
     * held exactly while one of them is the screen. */
    struct text_replay *replay;
    uint64_t replay_at;
} text_session;

/* The cluster's history list as its answer came (at most 10 games). */
#define TEXT_HISTORY_MAX 10
typedef struct text_history {
    int n;
    char entries[TEXT_HISTORY_MAX][TEXT_HISTORY_ENTRY];
} text_history;
/* Rows of `top`: with the title, a heading and the status, 24 rows. */
#define TEXT_TOP_ROWS 15

static inline int term_cols(const text_session *s) {
    return s->tn.width ? s->tn.width : DEFAULT_COLS;
}

/* Lines a screen may end with CRLF: the terminal's rows but the last, where
 * the cursor (and the prompt) stays. */
static inline int term_lines(const text_session *s) {
    int rows = s->tn.height ? s->tn.height : DEFAULT_ROWS;
    return rows > 2 ? rows - 1 : 1;
}

/* The end screen's room code, NULL for a solo game's. */
static inline const char *text_end_room(const srv_view *end) {
    return end->solo || !end->code[0] ? NULL : end->code;
}

/* ---------------------------------------------------------------- text.c --- */

/* Writes bytes for a human; on telnet a 0xFF data byte goes out doubled. */
void text_out(conn *c, const char *data, size_t len);
void text_outs(conn *c, const char *str);
/* The last line before the connection closes (netcat is told to press Enter). */
void text_say_last(conn *c, const char *line);
/* A continuation byte of a UTF-8 character (10xxxxxx). */
bool text_utf8_tail(char ch);
/* The command line being typed, as its echo showed it. */
void text_typed_line(proto_buf *b, const char *line, size_t len);
void text_set_status(text_session *s, const char *msg);
/* The running room whose boards the human sees, if any. */
srv_view *text_shown(const text_session *s);
/* c's seat in the room of its view, NULL for a spectator or in the lobby. */
const srv_view_seat *text_my_seat(const conn *c);
/* Playing or won in a running game: keys are moves in character mode. */
bool text_in_game(const conn *c);
/* Forgets the room: the player left it (or never gets another message of it). */
void text_forget_room(text_session *s);
bool text_char_mode(const text_session *s);
/* True where a key is a move at once (telnet, in a game). */
bool text_keys_play(const conn *c);
/* ":" where keys play, else "": how a command is typed where it is shown. */
const char *text_typed(const conn *c);
/* Moves s to screen `to` (TEXT_END and the replay's have their own below):
 * what the screen it leaves held (the end's view, the replay) is let go.
 * Once closing, nothing moves. */
void text_set_screen(text_session *s, text_screen to);
/* The end screen of view end (a reference is taken: end has the verdict). */
void text_show_end(text_session *s, srv_view *end, proto_end_reason reason,
                   uint64_t winner);
/* A finished game played back (s takes replay). */
void text_show_replay(text_session *s, text_replay *replay);
/* The end screen goes, if it shows: the lobby's screen instead. */
void text_drop_end(text_session *s);
/* Asserts what the screen holds: the end's view exactly on the end screen,
 * the replay exactly on a replay's. */
void text_check(const text_session *s);
/* The account screen goes, wiped first: it may hold a key. */
void text_forget_account_screen(text_session *s);
/* The greeting: the player is made and the first screen drawn. */
void text_greet(conn *c);
/* True if c's session is as the greeting left it, nothing pending. */
bool text_can_sleep(const conn *c);
void text_on_sleep_due(conn *c);
/* Makes an asleep session again; false if c has none (or no memory: closed). */
bool text_awake(conn *c);

/* ---------------------------------------------------------- text_timer.c --- */

/* Asks for a redraw: now if the last one is old enough, else at the pace. */
void text_request_draw(conn *c);
void text_on_timer(conn *c);
/* Arms the connection's timer for the earliest pending deadline. */
void text_arm(conn *c);

/* ------------------------------------------------ text_lobby.c, screens.c --- */

void text_draw_lobby(conn *c, proto_buf *b);
/* The whole screen, written at once; then the command line being typed. */
void text_draw(conn *c);

/* ------------------------------------------------------- text_commands.c --- */

/* Quitting is leaving: says why (the last line) and closes after the flush. */
void text_quit(conn *c, const char *why);
/* A request of the human's to the session (marks it typed, not an `end`'s reply). */
void text_request(conn *c, proto_request *req);
void text_run_command(conn *c, const char *line, size_t len);
/* The next frame of a playing replay is due ms from now. */
void text_replay_schedule(conn *c);
void text_replay_stop(conn *c);
/* A replay's controls (pause, faster, slower, stop); false for anything else. */
bool text_replay_control(conn *c, char key);
/* Plays finished game g back (NULL: there is none). */
void text_replay_show(conn *c, const proto_game_record *g);

/* ---------------------------------------------------------- text_input.c --- */

/* One key in character mode. */
void text_on_key(conn *c, const proto_key *k);

#endif
