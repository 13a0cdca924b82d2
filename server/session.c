/* session.c - delivery: a connection's player, through a sink of the connection's kind.
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "lobby.h"
#include "room.h"

/* ------------------------------------------------------ connection sink --- */

static void conn_sink_deliver(void *dest, const srv_msg *m) {
    conn_deliver(dest, m);
}

static void conn_sink_close(void *dest, sink_close_reason why) {
    conn *c = dest;
    (void)why;
    c->player = NULL; /* the game has let go of it: the close must not detach it */
    conn_close(c);
}

static bool conn_sink_alive(const void *dest) {
    const conn *c = dest;
    /* Closing connections leave the game in their close callback: until
     * then they take nothing new. */
    return conn_is_open(c);
}

static unsigned conn_sink_game_start_wait(void *dest) {
    return guard_game_start(dest);
}

static const sink_ops conn_sink_ops = {
    .deliver = conn_sink_deliver,
    .close = conn_sink_close,
    .alive = conn_sink_alive,
    .game_start_wait = conn_sink_game_start_wait,
};

static sink sink_of(conn *c) {
    return (sink){.ops = &conn_sink_ops, .dest = c};
}

/* -------------------------------------------------------------- players --- */

srv_player *session_player(conn *c, bool welcome) {
    if (!c->player) {
        srv_player *p = lobby_player_new(&c->srv->game, sink_of(c));
        if (!p) {
            srv_log_client(SRV_LOG_ERROR, "out of memory making a player for %s",
                           conn_peer(c));
            conn_close(c);
            return NULL;
        }
        c->player = p;
    }
    if (welcome) lobby_welcome(c->player);
    return c->player;
}

/* Detaches c's current player as if its connection had dropped. */
static void drop_player(conn *c) {
    srv_player *p = c->player;
    c->player = NULL;
    lobby_player_gone(p);
}

void session_take_back(conn *c, srv_player *p) {
    if (p != c->player) {
        if (c->player) drop_player(c);
        c->player = p;
    }
    srv_log(SRV_LOG_DEBUG, "player %llu resumed on %s", (unsigned long long)p->id,
            conn_peer(c));
    lobby_take_back(p, sink_of(c));
}

void session_conn_gone(conn *c) {
    srv_player *p = c->player;
    if (!p) return;
    if (p->room && p->room->state == ROOM_RUNNING)
        srv_log(SRV_LOG_DEBUG, "player %llu lost its connection; seat kept",
                (unsigned long long)p->id);
    drop_player(c);
}

/* ------------------------------------------------------------- requests --- */

void session_resume_failed(conn *c, const char *why) {
    bool close = guard_resume_failed(c);
    srv_player *me = session_player(c, false);
    if (!me) return;
    char message[160];
    snprintf(message, sizeof message, "%s%s", why,
             close ? "; too many failed resumes on this connection: closing it" : "");
    srv_send_error(me, PROTO_ERR_BAD_TOKEN, message);
    if (close) conn_close_after_flush(c);
}

static void do_resume(conn *c, const proto_request *req) {
    if (guard_resume_check(c) == GUARD_THROTTLED) {
        /* Not even looked up: guessing from this address is slowed down. */
        session_resume_failed(c, "too many failed resumes from your address; "
                                 "try again in a minute");
        return;
    }
    srv_player *p = lobby_find_resumable(&c->srv->game, req->token);
    if (!p) {
        session_resume_failed(c, "that token belongs to no game in progress");
        return;
    }
    session_take_back(c, p);
}

void session_request(conn *c, proto_request *req) {
    if (req->type == PROTO_REQ_RESUME) {
        do_resume(c, req);
    } else {
        srv_player *p = session_player(c, false);
        if (p) {
            lobby_request(p, req);
            return; /* it cleared req */
        }
    }
    proto_request_clear(req);
}

void session_json_line(conn *c, const char *line, size_t len) {
    proto_request req;
    proto_error err;
    if (proto_decode(line, len, &req, &err) == 0) {
        session_request(c, &req);
        return;
    }
    /* Everything but a failed hello or resume is a first "other reply", which
     * the automatic welcome must precede. */
    bool naming = (err.code == PROTO_ERR_BAD_MESSAGE || err.code == PROTO_ERR_BAD_DIR) &&
                  (req.type == PROTO_REQ_HELLO || req.type == PROTO_REQ_RESUME);
    srv_player *p = session_player(c, !naming);
    if (p) srv_send_error(p, err.code, err.message);
}
