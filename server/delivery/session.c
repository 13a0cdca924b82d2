/* session.c - delivery: a connection's player, through a sink of the connection's kind.
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

#include "accounts_kv.h"
#include "addr.h"
#include "guard.h"
#include "journal.h"
#include "arena_host.h"
#include "lobby.h"
#include "remote.h"
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

/* The same key guard.c counts the address's games under. */
static size_t conn_sink_addr_key(const void *dest, unsigned char *key) {
    const conn *c = dest;
    return addr_key(c->addr, c->addr_len, key);
}

static const sink_ops conn_sink_ops = {
    .deliver = conn_sink_deliver,
    .close = conn_sink_close,
    .alive = conn_sink_alive,
    .game_start_wait = conn_sink_game_start_wait,
    .addr_key = conn_sink_addr_key,
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
    if (c->srv->remote) remote_player_gone(c->srv->remote, p);
    accounts_kv_player_gone(c->srv->accounts_kv, p);
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

/* A failed resume: bad_token with why, and the connection is closed once it
 * has used up its tries (guard.c). A code is typed by a human (text mode
 * shows the error as its last line when it closes); a token is sent by a
 * program. */
static void resume_failed(conn *c, bool by_code, const char *why) {
    bool close = guard_resume_failed(c);
    srv_player *me = session_player(c, false);
    if (!me) return;
    char message[160];
    if (close && by_code)
        snprintf(message, sizeof message, "Too many wrong resume codes: closing.");
    else
        snprintf(message, sizeof message, "%s%s", why,
                 close ? "; too many failed resumes on this connection: closing it" : "");
    srv_count_error(c->srv, PROTO_ERR_BAD_TOKEN);
    size_t len;
    char *line = proto_enc_error(PROTO_ERR_BAD_TOKEN, message, &len);
    srv_msg m = {.type = SRV_MSG_ERROR,
                 .json = srv_buf_take(line, len),
                 .error = PROTO_ERR_BAD_TOKEN,
                 .text = message,
                 .closes = close};
    srv_send(me, &m);
    if (m.json) srv_buf_unref(m.json);
    if (close) conn_close_after_flush(c);
}

/* Why a resume was refused before any lookup (guard.h), in the words of who
 * asked: a token's program, a code's human. */
static const char *resume_refusal(guard_verdict v, bool by_code) {
    switch (v) {
    case GUARD_OK:
        break;
    case GUARD_THROTTLED:
        return by_code
                   ? "Too many failed resumes from your address: try again in a minute."
                   : "too many failed resumes from your address; try again in a minute";
    case GUARD_ADDR_BUSY:
        return "Too many resume attempts from your address: try again in a moment.";
    case GUARD_SERVER_BUSY:
        return "Too many resume attempts on this server: try again in a moment.";
    }
    return NULL;
}

static const char *no_seat(bool by_code) {
    return by_code
               ? "No seat is waiting for that code (a code works only until its grace "
                 "period ends)."
               : "that token belongs to no game in progress";
}

/* `resume` with a token (JSON, or typed) or a code (text mode). A code is
 * looked up only if its address is not throttled, has not used its share of
 * this second and the whole server has attempts left (guard_code_check), so
 * codes cannot be guessed; every refusal counts as a failure, as a wrong
 * code does. A token is 128 bits: it costs nothing of the codes' budget. */
static void do_resume(conn *c, const proto_request *req) {
    bool by_code = req->code[0] != '\0';
    guard_verdict verdict = by_code ? guard_code_check(c) : guard_resume_check(c);
    if (verdict != GUARD_OK) {
        /* Not even looked up: guessing from this address is slowed down. */
        resume_failed(c, by_code, resume_refusal(verdict, by_code));
        return;
    }
    game *g = &c->srv->game;
    srv_player *p =
        by_code ? lobby_find_by_code(g, req->code) : lobby_find_resumable(g, req->token);
    /* No seat has the token: an arena's entrant that waited when the server
     * stopped may (arena_host.h). */
    if (!p && !by_code) {
        srv_player *me = session_player(c, false);
        if (!me || arena_host_resume(me, req->token)) return;
    }
    if (!p && c->srv->remote) {
        srv_player *me = session_player(c, false);
        if (!me) return;
        if (!remote_connected(c->srv->remote)) {
            /* Not a failed guess: the seat may be on a node out of reach
             * (and, as a failed resume, no welcome before it). */
            srv_send_error(
                me, PROTO_ERR_UNAVAILABLE,
                "this node cannot reach the others now; try again in a moment");
            return;
        }
        if (remote_resume(c->srv->remote, me, req))
            return; /* another node may have the seat: it answers, or failed() runs */
    }
    if (!p) {
        resume_failed(c, by_code, no_seat(by_code));
        return;
    }
    /* The seat's code follows the connection: one that shows codes gets one. */
    p->wants_resume_code = c->player && c->player->wants_resume_code;
    session_take_back(c, p);
}

void session_remote_resume_failed(srv_player *p, bool by_code) {
    if (p->sink.ops != &conn_sink_ops) return;
    resume_failed(p->sink.dest, by_code, no_seat(by_code));
}

void session_remote_resume_here(srv_player *p, srv_player *seat) {
    if (p->sink.ops != &conn_sink_ops) return;
    seat->wants_resume_code = p->wants_resume_code;
    session_take_back(p->sink.dest, seat);
}

/* ------------------------------------------------------------- accounts --- */

/* A wrong key: bad_key, counted against the connection and its address
 * exactly as a failed resume is (the same throttles, the same closing). */
static void login_failed(conn *c, srv_player *me, guard_verdict verdict) {
    bool close = guard_resume_failed(c);
    char message[160];
    snprintf(message, sizeof message, "%s%s",
             verdict == GUARD_THROTTLED
                 ? "too many failed guesses from your address; try again in a minute"
                 : "wrong key for that name (or no account has it)",
             close ? "; too many failed guesses on this connection: closing it" : "");
    srv_count_error(c->srv, PROTO_ERR_BAD_KEY);
    size_t len;
    char *line = proto_enc_error(PROTO_ERR_BAD_KEY, message, &len);
    srv_msg m = {.type = SRV_MSG_ERROR,
                 .json = srv_buf_take(line, len),
                 .error = PROTO_ERR_BAD_KEY,
                 .text = message,
                 .closes = close};
    srv_send(me, &m);
    if (m.json) srv_buf_unref(m.json);
    if (close) conn_close_after_flush(c);
}

/* Where a hello is: as sent, or run again after the cluster's accounts were
 * read for its name (accounts_kv.h), with NATS answering or not. */
typedef enum hello_pass { HELLO_SENT, HELLO_FETCHED, HELLO_UNREACHED } hello_pass;

/* A login whose account could not be read from the cluster: unavailable,
 * not a wrong key (nothing counts against the connection). */
static bool fetched_unreached(conn *c, srv_player *me, proto_request *req,
                              hello_pass pass) {
    if (pass != HELLO_UNREACHED || !req->has_key ||
        acct_find(&c->srv->game.accounts, req->name))
        return false;
    memset(req->key, 0, sizeof req->key);
    srv_send_error(me, PROTO_ERR_UNAVAILABLE,
                   "this node cannot reach the cluster's accounts now; try again");
    return true;
}

/* `hello`: with `key`, a login (throttled like resume); without, a guest's
 * name, which may not be an account's. Returns true when the hello goes on
 * as any hello does (me->account set, req->name the account's spelling),
 * false when it was refused. */
static bool hello_account(conn *c, srv_player *me, proto_request *req, hello_pass pass) {
    game *g = &c->srv->game;
    /* Cluster mode: a name this node has not seen may be an account made on
     * another node a moment ago: the hello waits for one KV read. */
    if (pass == HELLO_SENT && c->srv->accounts_kv && g->accounts_ready &&
        !acct_find(&g->accounts, req->name)) {
        /* Cut off from NATS, a read would only wait its timeout. */
        if (!cluster_connected(c->srv->cluster))
            pass = HELLO_UNREACHED;
        else if (accounts_kv_fetch(c->srv->accounts_kv, me, req) == 0)
            return false;
    }
    if (fetched_unreached(c, me, req, pass)) return false;
    if (req->has_key) {
        guard_verdict verdict = guard_resume_check(c);
        acct_account *a = verdict == GUARD_OK && g->accounts_ready
                              ? acct_login(&g->accounts, req->name, req->key)
                              : NULL;
        memset(req->key, 0, sizeof req->key); /* not kept longer than needed */
        if (!a) {
            login_failed(c, me, verdict);
            return false;
        }
        me->account = a;
        snprintf(req->name, sizeof req->name, "%s", a->name);
        return true;
    }
    if (g->accounts_ready && acct_find(&g->accounts, req->name)) {
        srv_send_error(me, PROTO_ERR_NAME_TAKEN,
                       "that name belongs to an account; log in with its key or pick "
                       "another");
        return false;
    }
    me->account = NULL; /* a guest from now on */
    return true;
}

/* `registered` to me for account a, once its journal record is durable. */
static void send_registered(srv_player *me, acct_account *a, const char *hex) {
    game *g = me->game;
    me->account = a;
    size_t len;
    char *line = proto_enc_registered(a->name, hex, &len);
    srv_msg m = {.type = SRV_MSG_ACCOUNT,
                 .json = srv_buf_take(line, len),
                 .durable_at = journal_account(g->journal, a)};
    srv_send(me, &m);
    if (m.json) srv_buf_unref(m.json);
}

/* Cluster mode: the account is created in NATS KV first (the first node's
 * create wins); session_kv_registered answers. */
static void register_in_cluster(conn *c, srv_player *me) {
    if (!cluster_connected(c->srv->cluster)) { /* the create would only time out */
        session_kv_registered(me, NULL, NULL, ACCOUNTS_KV_FAILED);
        return;
    }
    uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
    char hex[2 * ACCT_KEY_BYTES + 1];
    acct_snapshot snap;
    int rc = -1;
    if (srv_random(key, sizeof key) == 0 && srv_random(salt, sizeof salt) == 0) {
        acct_snapshot_new(&snap, me->name, key, salt);
        acct_key_to_hex(key, hex);
        rc = accounts_kv_register(c->srv->accounts_kv, me, &snap, hex);
        memset(hex, 0, sizeof hex);
    }
    memset(key, 0, sizeof key);
    if (rc < 0) {
        srv_send_error(me, PROTO_ERR_BUSY, "the server cannot register now; try again");
        return;
    }
    guard_registered(c);
}

void session_kv_registered(srv_player *me, acct_account *a, const char *key_hex,
                           accounts_kv_result r) {
    if (r == ACCOUNTS_KV_TAKEN)
        srv_send_error(me, PROTO_ERR_NAME_TAKEN,
                       "that name belongs to an account already");
    else if (r != ACCOUNTS_KV_OK || !a)
        srv_send_error(me, PROTO_ERR_UNAVAILABLE,
                       "this node cannot reach the cluster's accounts now; try again");
    else {
        send_registered(me, a, key_hex);
        srv_log(SRV_LOG_INFO, "account %s registered in the cluster", a->name);
    }
}

/* The lines that came behind a held request, in order (one may hold again:
 * the rest then waits behind it, see session_json_line). */
static void run_later(conn *c, srv_player *p, const char *later, size_t later_len) {
    for (size_t at = 0; at < later_len && conn_is_open(c) && c->player == p;) {
        const char *line = later + at, *nl = memchr(line, '\n', later_len - at);
        size_t n = nl ? (size_t)(nl - line) : later_len - at;
        at += n + 1;
        session_json_line(c, line, n);
    }
}

void session_kv_fetched(srv_player *p, proto_request *req, bool reached,
                        const char *later, size_t later_len) {
    if (p->sink.ops != &conn_sink_ops) {
        proto_request_clear(req);
        return;
    }
    conn *c = p->sink.dest;
    if (hello_account(c, p, req, reached ? HELLO_FETCHED : HELLO_UNREACHED) &&
        (!c->srv->remote || !remote_route(c->srv->remote, p, req)))
        lobby_request(p, req);
    proto_request_clear(req);
    run_later(c, p, later, later_len);
}

void session_kv_claimed(srv_player *p, int32_t day, const proto_settings *settings,
                        accounts_kv_result r, const char *later, size_t later_len) {
    if (r == ACCOUNTS_KV_OK)
        lobby_daily_claimed(p, day, settings);
    else if (r == ACCOUNTS_KV_TAKEN)
        srv_send_error(p, PROTO_ERR_DAILY_PLAYED,
                       "this account has played today's daily game of that size");
    else /* never a game NATS could not vouch for: a second one may be running */
        srv_send_error(p, PROTO_ERR_UNAVAILABLE,
                       "this node cannot reach the cluster's daily challenge now; try "
                       "again");
    if (p->sink.ops == &conn_sink_ops) run_later(p->sink.dest, p, later, later_len);
}

/* `register`: the connection's hello name becomes an account; `registered`
 * with its key goes out once the account's record is durable. */
static void do_register(conn *c, srv_player *me) {
    game *g = &c->srv->game;
    lobby_welcome(me);
    if (!me->named) {
        srv_send_error(me, PROTO_ERR_BAD_MESSAGE,
                       "send hello with the name to register first");
        return;
    }
    int check =
        g->accounts_ready ? acct_check_name(&g->accounts, me->name) : ACCT_NO_MEMORY;
    if (check == ACCT_NAME_TAKEN || check == ACCT_RESERVED) {
        srv_send_error(me, PROTO_ERR_NAME_TAKEN,
                       check == ACCT_RESERVED
                           ? "names starting with bot- or player- are never registered"
                           : "that name belongs to an account already");
        return;
    }
    if (check != ACCT_OK) {
        srv_send_error(me, PROTO_ERR_BUSY, "the server cannot register now; try again");
        return;
    }
    unsigned wait_s = guard_register_check(c);
    if (wait_s) {
        char message[128];
        snprintf(message, sizeof message,
                 "your address has registered %d names this hour; try again in %u s",
                 GUARD_REGISTER_PER_HOUR, wait_s);
        srv_send_error(me, PROTO_ERR_RATE_LIMITED, message);
        return;
    }
    uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
    acct_account *a = NULL;
    if (c->srv->accounts_kv) {
        register_in_cluster(c, me);
        return;
    }
    if (srv_random(key, sizeof key) < 0 || srv_random(salt, sizeof salt) < 0 ||
        acct_register(&g->accounts, me->name, key, salt, &a) != ACCT_OK) {
        srv_send_error(me, PROTO_ERR_BUSY, "the server cannot register now; try again");
        return;
    }
    guard_registered(c);
    char hex[2 * ACCT_KEY_BYTES + 1];
    acct_key_to_hex(key, hex);
    memset(key, 0, sizeof key);
    srv_log(SRV_LOG_INFO, "account %s registered from %s", a->name, conn_peer(c));
    send_registered(me, a, hex);
    memset(hex, 0, sizeof hex);
}

void session_request(conn *c, proto_request *req) {
    if (req->type == PROTO_REQ_RESUME) {
        do_resume(c, req);
    } else if (req->type == PROTO_REQ_REGISTER) {
        /* Cluster mode: in NATS KV first (accounts_kv.h). */
        srv_player *p = session_player(c, false);
        if (p) do_register(c, p);
    } else {
        srv_player *p = session_player(c, false);
        if (p && req->type == PROTO_REQ_HELLO && !hello_account(c, p, req, HELLO_SENT)) {
            /* A hello held for the cluster's accounts owns req now. */
            if (p->account_wait) return;
            p = NULL;
        }
        if (p) {
            /* A move is timed from here to its `state` handed out (room.c). */
            if (req->type == PROTO_REQ_MOVE)
                c->srv->metrics.move_started_ns = uv_hrtime();
            /* Cluster mode: a room of another node takes it there. */
            if (!c->srv->remote || !remote_route(c->srv->remote, p, req))
                lobby_request(p, req);
            /* A move refused, or sent to another node, was not timed. */
            c->srv->metrics.move_started_ns = 0;
        }
    }
    /* The one place a client's request is cleared: whoever handled it borrowed it. */
    proto_request_clear(req);
}

void session_json_line(conn *c, const char *line, size_t len) {
    /* A hello waits for the cluster's accounts: what comes after it waits too
     * (over a WebSocket every message of a read comes here at once). */
    if (c->player && c->player->account_wait && c->srv->accounts_kv) {
        if (accounts_kv_defer(c->srv->accounts_kv, c->player, line, len) == 0) return;
        srv_send_error(c->player, PROTO_ERR_BUSY,
                       "the server is short of memory; send that again");
        return;
    }
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
