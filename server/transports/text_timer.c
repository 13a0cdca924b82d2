/* text_timer.c - text mode's deadlines on one timer: the greeting, redraw pacing, a
 * lone Esc, countdowns, replay frames. */
#include "text_internal.h"

/* Asks for a redraw: now if the last one is old enough, else at the pace. */
void text_request_draw(conn *c) {
    text_session *s = c->text;
    if (!s->greeted || s->screen == TEXT_CLOSING || !conn_is_open(c)) return;
    s->dirty = true;
    uint64_t now = uv_now(c->srv->loop);
    if (now >= s->last_draw + REDRAW_MS) {
        text_draw(c);
        return;
    }
    s->draw_at = s->last_draw + REDRAW_MS;
    text_arm(c);
}

/* --------------------------------------------------------------- timer --- */

void text_on_timer(conn *c) {
    text_session *s = c->text;
    if (!s || !conn_is_open(c)) return;
    uint64_t now = uv_now(c->srv->loop);
    if (s->esc_at && s->esc_at <= now) {
        s->esc_at = 0;
        proto_key k;
        if (proto_keys_flush(&s->keys, &k)) text_on_key(c, &k);
        if (!c->text || !conn_is_open(c)) return;
    }
    if (s->replay && s->replay_at && s->replay_at <= now) {
        text_replay_step(s->replay);
        s->dirty = true;
        s->draw_at = now;
        text_replay_schedule(c);
    }
    if (!s->greeted && s->greet_at && s->greet_at <= now)
        text_greet(c);
    else if ((s->dirty && s->draw_at && s->draw_at <= now) ||
             (s->tick_at && s->tick_at <= now))
        text_draw(c);
    if (c->text && conn_is_open(c)) text_arm(c);
}

/* Arms the connection's timer for the earliest pending deadline. */
void text_arm(conn *c) {
    text_session *s = c->text;
    /* A draining connection's timer is its flush deadline: leave it be. */
    if (!conn_is_open(c)) return;
    uint64_t next = 0;
    uint64_t deadlines[5] = {s->greeted ? 0 : s->greet_at, s->dirty ? s->draw_at : 0,
                             s->esc_at, s->tick_at, s->replay_at};
    for (int i = 0; i < 5; i++)
        if (deadlines[i] && (!next || deadlines[i] < next)) next = deadlines[i];
    uint64_t now = uv_now(c->srv->loop);
    if (!next && text_can_sleep(c)) {
        /* Given back from a timer: the caller may still use the session. */
        uint64_t at = s->last_draw + REDRAW_MS;
        if (conn_timer_start(c, text_on_sleep_due, at > now ? at - now : 0) < 0)
            conn_close(c);
        return;
    }
    if (!next) {
        conn_timer_stop(c);
        return;
    }
    if (conn_timer_start(c, text_on_timer, next > now ? next - now : 0) < 0)
        conn_close(c);
}
