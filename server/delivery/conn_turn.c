/* conn_turn.c - the loop turn: flushes around poll, the turn count, pauses. */
#include "conn_internal.h"

/* A loop turn longer than its poll timeout by this much was a pause. */
#define PAUSE_MS 500
/* Polls after a pause before timers may expire anyone: the first accepts
 * connections made during the pause, the next reads what they sent. */
#define CATCH_UP_TURNS 3

static uint64_t mono_ms(void) {
    return uv_hrtime() / 1000000;
}

/* A pause (or a turn that stalled as long) was seen: timers that expire
 * clients wait until the polls after it have read what arrived meanwhile. */
static void note_pause(srv *s, uint64_t ms) {
    if (!s->io_behind)
        srv_log(SRV_LOG_INFO, "the process was paused (or stalled) for about %llu ms",
                (unsigned long long)ms);
    s->io_behind = CATCH_UP_TURNS;
}

/* Before poll, after timers and held input: write what they queued. */
static void on_turn_prepare(uv_prepare_t *h) {
    srv *s = h->loop->data;
    conn_flush_all(s);
    s->poll_timeout = uv_backend_timeout(s->loop);
    s->prepare_ms = mono_ms();
    /* Paused since the last poll (in timers, say, or a journal's fsync):
     * timers that come due only now must wait for the input too. */
    if (s->check_ms && s->prepare_ms - s->check_ms > PAUSE_MS)
        note_pause(s, s->prepare_ms - s->check_ms);
}

/* After poll: write what the input queued, then the next turn begins. A poll
 * that took much longer than its timeout means the process was paused; until
 * a poll has read what arrived meanwhile, timers must not expire anyone. */
static void on_turn_check(uv_check_t *h) {
    srv *s = h->loop->data;
    conn_flush_all(s);
    uint64_t now = mono_ms();
    bool paused = s->poll_timeout >= 0 &&
                  now > s->prepare_ms + (uint64_t)s->poll_timeout + PAUSE_MS;
    if (paused)
        note_pause(s, now - s->prepare_ms);
    else if (s->io_behind)
        s->io_behind--;
    s->check_ms = now;
    s->reads_last_turn = s->reads_this_turn;
    s->reads_this_turn = 0;
    s->turn++;
}

void conn_loop_init(srv *s) {
    conn_timers_init(s);
    srv_list_init(&s->input_list);
    srv_list_init(&s->flush_list);
    srv_list_init(&s->held_list);
    durable_waiters_init(&s->held_waiters, s->journal, &s->held_list, conn_on_durable, s);
    s->check_ms = mono_ms();
    s->poll_timeout = -1;
    uv_idle_init(s->loop, &s->turn_idle);
    uv_prepare_init(s->loop, &s->turn_prepare);
    uv_check_init(s->loop, &s->turn_check);
    uv_prepare_start(&s->turn_prepare, on_turn_prepare);
    uv_check_start(&s->turn_check, on_turn_check);
    uv_unref((uv_handle_t *)&s->turn_prepare);
    uv_unref((uv_handle_t *)&s->turn_check);
}

bool srv_defer_until_io(srv *s, uv_timer_t *t, uv_timer_cb cb) {
    uint64_t now = mono_ms();
    if (s->check_ms && now - s->check_ms > PAUSE_MS)
        note_pause(s,
                   now - s->check_ms); /* paused since the last poll, before this timer */
    if (!s->io_behind) return false;
    if (t) uv_timer_start(t, cb, DEFER_MS, 0);
    return true;
}
