/* room_restore.c - a running game rebuilt from its record (recovery, takeover). */
#include "resume.h"
#include "room_internal.h"

void room_restore_begin(room *r) {
    uint64_t now = uv_now(r->game->loop);
    for (int i = 0; i < r->nseats; i++) {
        room_seat_deal(r, &r->seats[i]);
        r->seats[i].status = PROTO_PLAYING;
        r->seats[i].last_move = now; /* the move timeout counts from the restart */
    }
    r->state = ROOM_RUNNING;
    if (!r->solo) {
        srv_list_remove(&r->listed);
        srv_list_push(&r->game->running_rooms, &r->listed);
    }
}

void room_restore_finish(room *r, const bool *left, uint64_t remaining_ms) {
    uint64_t now = uv_now(r->game->loop);
    const room_seat *winner = NULL;
    for (int i = 0; i < r->nseats; i++) {
        room_seat *seat = &r->seats[i];
        room_update_status(r, seat);
        seat->connected = false;
        seat->grace_until = now + r->game->cfg->grace_ms;
        if (left[i]) {
            if (seat->status != PROTO_OVER) seat->status = PROTO_LEFT;
            srv_player_release(room_seat_unlink(r, i));
        } else {
            /* People on telnet and netcat resume with the code they saw before
             * (bots come back by themselves: they have no code). */
            if (!seat->bot_level) resume_code_assign(seat->player);
            if (!r->solo && !winner && eng_has_won(&seat->board, r->settings.target))
                winner = seat; /* its end record was lost in the crash */
        }
    }
    r->ends_at = r->settings.time_limit ? now + remaining_ms : 0;
    srv_log(SRV_LOG_INFO, "%s%s restored from the journal",
            r->solo ? "a solo game" : "room ", r->code);
    if (winner)
        room_check_end(r, winner);
    else
        room_check_end(r, NULL);
    if (r->state == ROOM_RUNNING)
        room_rearm(r);
    else
        room_maybe_free(r);
}

void room_restore_abandon(room *r) {
    for (int i = 0; i < r->nseats; i++) {
        srv_player *p = room_seat_unlink(r, i);
        if (p) srv_player_release(p);
    }
    r->state = ROOM_ENDED;
    room_maybe_free(r);
}
