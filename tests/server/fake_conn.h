/* fake_conn.h - race2048_server in process: a server set up as main.c does but without a
 * listener, and connections on socketpairs whose other end the test reads. */
#ifndef RACE2048_TESTS_FAKE_CONN_H
#define RACE2048_TESTS_FAKE_CONN_H

#include <stddef.h>

#include "conn.h"

/* One connection and the test's end of its socketpair. */
typedef struct fake_conn {
    conn *c;
    int peer;                /* the test's end */
    char buf[(1 << 17) + 1]; /* bytes read from peer and not consumed, then a NUL */
    size_t len;
} fake_conn;

/* Sets up loop and s as main.c does, without a listener or a journal: 100
 * clients, lines up to max_line, 30 s grace, 1 MiB of output, seed 42, the
 * log at level. The rest (the loop's turn, the connections' timer) is the
 * test's to start. */
void fake_server_init(srv *s, uv_loop_t *loop, size_t max_line, srv_log_level level);
/* Closes every room and every fake connection the way shutdown does, then
 * every handle, and closes the loop; fails the test if a connection, player
 * or room is left (ASan finds leaked memory). */
void fake_server_free(srv *s, uv_loop_t *loop);

/* A connection of s in mode, as conn_accept would leave it (freed by
 * fake_server_free, or by the server once it closes it). */
fake_conn *fake_conn_new(srv *s, conn_mode mode);
/* Ends the loop's turn (its output is written then; a socketpair takes it at
 * once) and appends what the server wrote to f->buf; returns f->len. */
size_t fake_conn_pull(fake_conn *f);

#endif
