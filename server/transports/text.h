/* text.h - text mode for humans on telnet or netcat: probe, greeting, commands, keys,
 * redraws. */
#ifndef RACE2048_TEXT_H
#define RACE2048_TEXT_H

#include "conn.h"
#include "transport.h"

/* c has been judged a human (first byte not '{', or silence): probe for
 * telnet (plainly if the client already spoke telnet) and greet. May close
 * c if memory runs out. */
void text_begin(conn *c, bool telnet_first);
/* Raw bytes from a text connection (telnet commands included). */
void text_input(conn *c, const char *data, size_t n);
/* Shows a server message to the human (redraws, errors, the end screen). */
void text_deliver(conn *c, const srv_msg *m);
/* The server is about to close c (stopping, idle, a slow or too long line):
 * one line saying why, if c has a session. Text mode's say (transport.h). */
void text_say(conn *c, conn_say why);
/* True while a telnet command is cut short (an unfinished request). */
bool text_midway(const conn *c);
/* Frees c's text session. */
void text_free(conn *c);
/* An idle human's session that is still as fresh as after the greeting is
 * given back (most idle text connections: netcat left open, scanners); it is
 * made again, the same, when input or a message comes. For the sweep. */
void text_sleep(conn *c);
/* True if c has a text session, awake or asleep. The mode first: `text`
 * shares its place with the web and proxy states (conn.h). */
static inline bool text_has_session(const conn *c) {
    return c->mode == CONN_TEXT && (c->text || c->text_asleep);
}

#endif
