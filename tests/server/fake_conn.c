/* fake_conn.c - race2048_server in process, on socketpairs (see fake_conn.h). */
#include "fake_conn.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "room.h"
#include "transport.h"
#include "transports.h"

#define FAKES_MAX 16

static fake_conn *fakes[FAKES_MAX];
static int nfakes;
static eng_tables *tables;

void fake_server_init(srv *s, uv_loop_t *loop, size_t max_line, srv_log_level level) {
    assert_int_equal(uv_loop_init(loop), 0);
    static srv_config cfg; /* srv keeps a pointer to it */
    cfg = (srv_config){.max_clients = 100,
                       .max_line = max_line,
                       .grace_ms = 30000,
                       .max_output = 1 << 20,
                       .has_seed = true,
                       .seed = 42,
                       .log_level = level};
    srv_log_set_level(level);
    tables = malloc(sizeof *tables);
    assert_non_null(tables);
    eng_tables_init(tables);
    srv_init(s, loop, &cfg, tables);
    transports_install(s);
    nfakes = 0;
}

static void close_handle(uv_handle_t *h, void *arg) {
    (void)arg;
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

void fake_server_free(srv *s, uv_loop_t *loop) {
    room_close_all(&s->game);
    for (int i = 0; i < nfakes; i++) {
        if (!conn_is_closing(fakes[i]->c)) conn_close(fakes[i]->c);
        close(fakes[i]->peer);
    }
    uv_run(loop, UV_RUN_DEFAULT); /* each connection's close callback frees it */
    for (int i = 0; i < nfakes; i++)
        free(fakes[i]);
    nfakes = 0;
    uv_walk(loop, close_handle, NULL); /* the turn's handles, the connections' timer */
    uv_run(loop, UV_RUN_DEFAULT);
    conn_timers_free(s);
    int rc = uv_loop_close(loop);
    free(tables);
    tables = NULL;
    assert_true(srv_list_empty(&s->conns));
    assert_true(srv_list_empty(&s->game.players));
    assert_true(srv_list_empty(&s->game.rooms));
    assert_int_equal(rc, 0);
}

fake_conn *fake_conn_new(srv *s, conn_mode mode) {
    assert_true(nfakes < FAKES_MAX);
    fake_conn *f = calloc(1, sizeof *f);
    assert_non_null(f);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    conn *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->srv = s;
    srv_list_init(&c->flush_link);
    srv_list_init(&c->input_link);
    assert_int_equal(uv_tcp_init(s->loop, &c->tcp), 0);
    c->tcp.data = c;
    assert_int_equal(uv_tcp_open(&c->tcp, sv[0]), 0);
    c->open_handles = 1;
    assert_int_equal(proto_framer_init(&c->framer, s->cfg->max_line, false), 0);
    srv_list_push(&s->conns, &c->link);
    s->nconns++;
    conn_set_transport(c, mode);
    f->c = c;
    f->peer = sv[1];
    fakes[nfakes++] = f;
    return f;
}

size_t fake_conn_pull(fake_conn *f) {
    conn_flush_all(f->c->srv);
    for (;;) {
        ssize_t r =
            recv(f->peer, f->buf + f->len, sizeof f->buf - 1 - f->len, MSG_DONTWAIT);
        if (r <= 0) break;
        f->len += (size_t)r;
    }
    f->buf[f->len] = '\0';
    return f->len;
}
