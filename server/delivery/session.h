/* session.h - delivery: a connection's player, through a sink of the connection's kind.
 *
 * Transports hand complete requests here; the session makes the connection's
 * player (with the connection as its destination), resolves `hello` and
 * `resume` with the address guards (guard.c), and passes everything else to
 * the game (lobby.h). The game never sees a connection. */
#ifndef RACE2048_SESSION_H
#define RACE2048_SESSION_H

#include "accounts_kv.h"
#include "conn.h"

/* The player of c, made (named player-N) if c has none yet; NULL if memory
 * runs out (c is then closed). welcome: send its welcome if it has not had
 * one. */
srv_player *session_player(conn *c, bool welcome);
/* Handles one JSON line from c: decode, then act; every failure gets one error. */
void session_json_line(conn *c, const char *line, size_t len);
/* Acts on a decoded request from c (JSON or text mode). Takes over req's
 * owned parts and clears it. */
void session_request(conn *c, proto_request *req);
/* c takes player p (found by its token or resume code) and p's seat back. */
void session_take_back(conn *c, srv_player *p);
/* Cluster mode: no node had the seat that player p's connection asked to
 * resume (remote.h calls this through remote_on_resume_failed). */
void session_remote_resume_failed(srv_player *p, bool by_code);
/* Cluster mode: a resume of player p's connection that waited for a
 * takeover found seat on this node (remote_on_resume_here): p's connection
 * takes it. */
void session_remote_resume_here(srv_player *p, srv_player *seat);
/* Cluster mode (accounts_kv.h): what became of a `register`, and a held
 * `hello` run again once its account was looked up. */
void session_kv_registered(srv_player *me, acct_account *a, const char *key_hex,
                           accounts_kv_result r);
void session_kv_fetched(srv_player *p, proto_request *req, bool reached,
                        const char *later, size_t later_len);
/* Cluster mode: what became of a `daily`'s claim (accounts_kv_on_claimed). */
void session_kv_claimed(srv_player *p, int32_t day, const proto_settings *settings,
                        accounts_kv_result r, const char *later, size_t later_len);
/* c is closing: its player is disconnected (a running game keeps the seat). */
void session_conn_gone(conn *c);

#endif
