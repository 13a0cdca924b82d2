/* text_lobby.c - text mode's lobby screen: the rules, the commands (or help,
 * history, an account screen) and where the player stands, fitted to the terminal. */
#include "text_internal.h"

#include <stdio.h>

#include "accounts.h"
#include "journal.h"
#include "lobby.h"

/* -------------------------------------------------------------- screens --- */

static const char *title = "race2048 - race your friends at 2048";

/* The lobby's commands: two columns where they fit, else one. On a narrow
 * terminal version 4's daily, top, arenas and register give way (help lists
 * them), so that the lobby still fits 24 rows. */
typedef struct lobby_command {
    const char *usage, *what;
    bool wide_only;
} lobby_command;

static const lobby_command lobby_commands[] = {
    {"solo [SIZE]", "play alone (3-8, default 4)", false},
    {"quick [N]", "race the next who ask", false},
    {"create [N]", "make a room for N players", false},
    {"join CODE", "join a friend's room", false},
    {"watch CODE", "watch a race", false},
    {"rooms", "list the rooms", false},
    {"leave", "leave a room, queue or game", false},
    {"rematch", "race them again", false},
    {"name NAME", "choose your name", false},
    {"resume CODE", "seat back after a drop", false},
    {"history", "the games that ended lately", false},
    {"replay ID", "watch one again", false},
    {"color on|off", "colours", false},
    {"bot [LEVEL]", "race a bot now (1-5)", false},
    {"daily [SIZE]", "today's seed for everyone", true},
    {"top", "the best players", true},
    {"arenas", "tournaments of races", true},
    {"register", "keep your name: a key", true},
    {"help", "every command", false},
    {"quit", "leave the server", false},
};
#define LOBBY_COMMANDS (int)(sizeof lobby_commands / sizeof lobby_commands[0])

static const char lobby_rules[] =
    "Slide the tiles with the arrow keys (or w a s d, h j k l): equal tiles merge and "
    "score. In a race everyone gets the same tiles in the same places; the first to "
    "make the target tile wins, or the best score once every board is stuck or the "
    "time is up.";

static const char lobby_keys[] =
    "On telnet, in a game, every key is a move at once (h and l too): type : first "
    "for a command (:leave, :help).";

/* Two columns need 80: 2 + 12 + 2 + 27 on the left, 2 + 11 + 1 + 22 on the
 * right. */
static void lobby_command_list(proto_buf *b, int cols) {
    if (cols >= 80) {
        for (int i = 0; i < LOBBY_COMMANDS; i += 2) {
            const lobby_command *l = &lobby_commands[i], *r = l + 1;
            if (i + 1 == LOBBY_COMMANDS) {
                proto_render_linef(b, "  %-12s  %s", l->usage, l->what);
                break;
            }
            proto_render_linef(b, "  %-12s  %-27s  %-11s %s", l->usage, l->what, r->usage,
                               r->what);
        }
        return;
    }
    for (int i = 0; i < LOBBY_COMMANDS; i++) {
        const lobby_command *l = &lobby_commands[i];
        if (l->wide_only) continue;
        char line[64];
        snprintf(line, sizeof line, "  %-12s  %s", l->usage, l->what);
        proto_render_wrapped(b, line, cols);
    }
}

/* What the lobby says about where the player stands: name, queue, room. */
static void lobby_situation(conn *c, proto_buf *b, int cols) {
    text_session *s = c->text;
    srv_player *p = c->player;
    if (p && !s->named) {
        char line[80];
        if (p->account)
            snprintf(line, sizeof line, "You are %s (rating %d).", p->name,
                     acct_rating(p->account));
        else
            snprintf(line, sizeof line, "You are %s.", p->name);
        proto_render_wrapped(b, line, cols);
    }
    if (p && p->queued) {
        char line[160];
        int waiting = lobby_queue_waiting(p);
        snprintf(line, sizeof line,
                 "Looking for a %d-player race (%dx%d to %u): %d of %d here.\nType leave "
                 "to stop waiting.",
                 p->queue_key.players, p->queue_key.size, p->queue_key.size,
                 p->queue_key.target, waiting, p->queue_key.players);
        proto_render_wrapped(b, line, cols);
    }
    /* A waiting room that nobody is left in closes now: not shown. */
    const srv_view *v = s->view;
    if (v && v->state == SRV_VIEW_WAITING && v->nseats > 0) {
        proto_buf t;
        proto_buf_init(&t);
        proto_buf_printf(&t, "Room %s (%dx%d to %u): %d of %d players are here:", v->code,
                         v->settings.size, v->settings.size, v->settings.target,
                         v->nseats, v->settings.players);
        for (int i = 0; i < v->nseats; i++)
            proto_buf_printf(&t, "%s %s", i ? "," : "", v->seats[i].name);
        proto_buf_printf(&t, ".\nTell a friend to type:  join %s", v->code);
        if (!t.failed) proto_render_wrapped(b, t.data, cols);
        if (t.failed) b->failed = true;
        proto_buf_free(&t);
    }
    if (s->status[0]) proto_render_wrapped(b, s->status, cols);
}

/* Cuts what b holds from `from` on after `rows` terminal rows at cols
 * columns (a line wider than cols takes more than one). */
static void clip_rows(proto_buf *b, size_t from, int rows, int cols) {
    if (b->failed) return;
    size_t line = from;
    for (size_t i = from; i + 1 < b->len; i++) {
        if (b->data[i] != '\r' || b->data[i + 1] != '\n') continue;
        rows -= proto_render_count_rows(b->data + line, i + 2 - line, cols);
        if (rows < 0) {
            b->len = line;
            b->data[b->len] = '\0';
            return;
        }
        line = i + 2;
    }
}

/* The lobby fits the terminal: the rules, the commands and where the player
 * stands, dropping the rules first, then the commands, when it is short.
 * What was asked for (help, history) keeps the screen before the rules: as
 * much of it as fits. */
void text_draw_lobby(conn *c, proto_buf *b) {
    text_session *s = c->text;
    int cols = term_cols(s), lines = term_lines(s);
    proto_buf situation, commands;
    proto_buf_init(&situation);
    proto_buf_init(&commands);
    lobby_situation(c, &situation, cols);
    int n_title = proto_render_wrapped(NULL, title, cols);
    int n_situation = proto_render_count_lines(situation.data, situation.len);
    bool asked = s->screen == TEXT_HISTORY || s->screen == TEXT_HELP || s->account_screen;
    /* Rows for what was asked: the rest but the blank lines around it. */
    int room_for = lines - n_title - n_situation - 2;
    if (s->screen == TEXT_HISTORY) {
        static const char heading[] = "Recently finished games (replay ID watches one):";
        int n_heading = proto_render_wrapped(NULL, heading, cols);
        proto_render_wrapped(&commands, heading, cols);
        int rows = room_for > n_heading ? room_for - n_heading : 0;
        const proto_game_record *games[TEXT_HISTORY_MAX];
        int listed;
        if (s->history) { /* every node's, as the cluster answered */
            listed = text_replay_history_lines(
                (const char(*)[TEXT_HISTORY_ENTRY])s->history->entries, s->history->n,
                &commands, cols, rows);
        } else {
            int n = journal_history(c->srv->journal, TEXT_HISTORY_MAX, games);
            listed = n < 0 ? -1 : text_replay_history(games, n, &commands, cols, rows);
        }
        if (listed == 0 && rows > 0) proto_render_wrapped(&commands, "  none yet", cols);
        if (listed < 0) commands.failed = true;
    } else if (s->screen == TEXT_HELP) {
        proto_render_wrapped(&commands, proto_command_help(), cols);
    } else if (s->account_screen) {
        proto_render_wrapped(&commands, s->account_screen, cols);
    } else {
        lobby_command_list(&commands, cols);
    }
    if (asked && !commands.failed && room_for > 0)
        clip_rows(&commands, 0, room_for, cols);
    int n_commands = proto_render_count_lines(commands.data, commands.len);
    int n_rules = proto_render_wrapped(NULL, lobby_rules, cols);
    int n_keys = proto_render_wrapped(NULL, lobby_keys, cols);

    size_t start = b->len;
    proto_buf_puts(b, "\x1b[H\x1b[2J");
    proto_render_wrapped(b, title, cols);
    int left = lines - n_title - n_situation;
    if (!asked && left >= 1 + n_rules + 1 + n_commands + n_keys + 1) {
        proto_render_linef(b, "%s", "");
        proto_render_wrapped(b, lobby_rules, cols);
        left -= 1 + n_rules;
    }
    if (left >= 1 + n_commands + 1) {
        proto_render_linef(b, "%s", "");
        if (commands.len) proto_buf_append(b, commands.data, commands.len);
        left -= 1 + n_commands;
        if (!asked && left >= n_keys + 1) {
            proto_render_wrapped(b, lobby_keys, cols);
            left -= n_keys;
        }
        proto_render_linef(b, "%s", "");
    } else if (asked && left >= n_commands) {
        if (commands.len) proto_buf_append(b, commands.data, commands.len);
    } else if (left >= 2) {
        proto_render_wrapped(b, "Type help for the commands, or bot to race a bot now.",
                             cols);
    }
    if (situation.len) proto_buf_append(b, situation.data, situation.len);
    if (situation.failed || commands.failed) b->failed = true;
    proto_buf_free(&situation);
    proto_buf_free(&commands);
    /* Whatever still does not fit (a very short terminal) is cut off at the
     * bottom, so that the title stays on the top line. */
    clip_rows(b, start + 7, lines, cols);
}
