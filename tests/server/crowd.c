/* crowd.c - an in-process race2048d holding many players and rooms, to measure the
 * server CPU one request costs as the crowd grows (lookups must not scan). */
#include "crowd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include "conn.h"
#include "session.h"
#include "room.h"
#include "transports.h"

static srv S;
static uv_loop_t loop;
static eng_tables *tables;
/* Client ends of the server's connections: [0] measures, [1] and [2] seat racers. */
static int client_fd[3] = {-1, -1, -1};
static conn *server_conn[3];

/* --------------------------------------------------------------- helpers --- */

static void on_connection(uv_stream_t *listener, int status) {
    if (status == 0) conn_accept(&S, listener);
}

/* Reads and drops whatever the server wrote to every client so far. */
static void drain_clients(void) {
    char buf[1 << 16];
    for (int i = 0; i < 3; i++)
        while (client_fd[i] >= 0 && recv(client_fd[i], buf, sizeof buf, MSG_DONTWAIT) > 0)
            ;
}

/* Runs the loop until the server holds `want` connections. The client's
 * connect has completed, so the listener is readable: each turn does work. */
static int wait_conns(unsigned want) {
    for (int i = 0; i < 100 && S.nconns < want; i++)
        uv_run(&loop, UV_RUN_ONCE);
    return S.nconns >= want ? 0 : -1;
}

/* A loopback client, accepted by the server, that has said hello as JSON. */
static int open_client(int i, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("crowd: connect");
        if (fd >= 0) close(fd);
        return -1;
    }
    client_fd[i] = fd;
    if (wait_conns((unsigned)i + 1) < 0) return -1;
    server_conn[i] = srv_container(S.conns.prev, conn, link);
    static const char hello[] = "{\"type\":\"hello\",\"name\":\"crowd\"}\n";
    if (send(fd, hello, sizeof hello - 1, 0) != (ssize_t)(sizeof hello - 1)) return -1;
    for (int k = 0; k < 100 && !server_conn[i]->player; k++)
        uv_run(&loop, UV_RUN_ONCE);
    return server_conn[i]->player ? 0 : -1;
}

static void say(int i, const char *line) {
    session_json_line(server_conn[i], line, strlen(line));
}

/* The connection's player loses its connection (its seat is kept) and the
 * connection gets a fresh player with its next request. */
static void let_go(int i) {
    session_conn_gone(server_conn[i]);
}

/* ----------------------------------------------------------------- build --- */

int crowd_build(unsigned players, unsigned racers) {
    if (uv_loop_init(&loop) < 0) return -1;
    static srv_config cfg; /* srv keeps a pointer to it */
    cfg = (srv_config){.max_clients = 100,
                       .max_line = 4096,
                       .grace_ms = 86400000ull,
                       .max_output = 64 << 20,
                       .max_per_ip = 100,
                       .log_level = SRV_LOG_ERROR};
    srv_log_set_level(SRV_LOG_ERROR);
    tables = malloc(sizeof *tables);
    if (!tables) return -1;
    eng_tables_init(tables);
    srv_init(&S, &loop, &cfg, tables);
    transports_install(&S);
    conn_loop_init(&S);

    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", 0, &addr);
    S.nlisteners = 1;
    uv_tcp_init(&loop, &S.listeners[0]);
    S.listeners[0].data = &S;
    if (uv_tcp_bind(&S.listeners[0], (const struct sockaddr *)&addr, 0) < 0 ||
        uv_listen((uv_stream_t *)&S.listeners[0], 16, on_connection) < 0) {
        fprintf(stderr, "crowd: cannot listen\n");
        return -1;
    }
    struct sockaddr_in bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&S.listeners[0], (struct sockaddr *)&bound, &len);
    int port = ntohs(bound.sin_port);
    for (int i = 0; i < 3; i++)
        if (open_client(i, port) < 0) {
            fprintf(stderr, "crowd: client %d was not accepted\n", i);
            return -1;
        }

    unsigned solo = players > racers ? players - racers : 0;
    for (unsigned n = 0; n < solo; n++) {
        say(0, "{\"type\":\"solo\"}");
        let_go(0);
        if (n % 32 == 0) {
            uv_run(&loop, UV_RUN_NOWAIT);
            drain_clients();
        }
    }
    for (unsigned n = 0; n + 1 < players - solo; n += 2) {
        say(1, "{\"type\":\"create\"}");
        char join[64];
        snprintf(join, sizeof join, "{\"type\":\"join\",\"room\":\"%s\"}",
                 server_conn[1]->player->room->code);
        say(2, join);
        let_go(1);
        let_go(2);
        uv_run(&loop, UV_RUN_NOWAIT);
        drain_clients();
    }
    /* The measuring connection needs a player of its own. */
    say(0, "{\"type\":\"ping\",\"t\":0}");
    uv_run(&loop, UV_RUN_NOWAIT);
    drain_clients();
    return 0;
}

/* --------------------------------------------------------------- measure --- */

static double cpu_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

double crowd_cpu_us(const char *line, int iterations) {
    conn *c = server_conn[0];
    size_t len = strlen(line);
    double start = cpu_us();
    for (int i = 0; i < iterations; i++) {
        if (!conn_is_open(c)) return -1;
        session_json_line(c, line, len);
        if (i % 16 == 15) {
            uv_run(&loop, UV_RUN_NOWAIT);
            drain_clients();
        }
    }
    uv_run(&loop, UV_RUN_NOWAIT);
    drain_clients();
    return (cpu_us() - start) / iterations;
}

srv *crowd_srv(void) {
    return &S;
}

unsigned crowd_players(void) {
    unsigned n = 0;
    for (srv_link *l = S.game.players.next; l != &S.game.players; l = l->next)
        n++;
    return n;
}

unsigned crowd_rooms(void) {
    unsigned n = 0;
    for (srv_link *l = S.game.rooms.next; l != &S.game.rooms; l = l->next)
        n++;
    return n;
}

/* ------------------------------------------------------------------ free --- */

static void close_any(uv_handle_t *h, void *arg) {
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

int crowd_free(void) {
    room_close_all(&S.game);
    for (int i = 0; i < 3; i++) {
        if (server_conn[i]) conn_close(server_conn[i]);
        server_conn[i] = NULL;
        if (client_fd[i] >= 0) close(client_fd[i]);
        client_fd[i] = -1;
    }
    uv_close((uv_handle_t *)&S.listeners[0], NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_walk(&loop, close_any, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&loop);
    conn_timers_free(&S);
    free(tables);
    tables = NULL;
    return rc;
}
