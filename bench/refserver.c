/* refserver.c - the naive reference for race2048-bench server --mode race: libuv +
 * jansson, no tricks. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "engine.h"

/* What race2048d is measured against (clients/README.md): the same exchange
 * as a minimal server would do it. Every message is built as a jansson
 * object and encoded on its own; every reply to every client is its own
 * uv_write of its own copy. It speaks only what the load generator uses:
 * hello, quick (races of 2), move, leave; 4x4 boards, no target, no end. */

typedef struct ref_room ref_room;

typedef struct ref_client {
    uv_tcp_t tcp;
    uint64_t id;
    char name[17];
    char *line; /* the unfinished line */
    size_t len, cap;
    ref_room *room;
    eng_game game;
    bool over;
    bool closing;
} ref_client;

struct ref_room {
    ref_client *seat[2];
};

static uv_loop_t *loop;
static eng_tables tables;
static ref_client *waiting; /* a `quick` without an opponent yet */
static uint64_t next_id = 1;
static uint32_t next_seed = 1;

typedef struct ref_write {
    uv_write_t req;
    char *data;
} ref_write;

static void on_written(uv_write_t *req, int status) {
    (void)status;
    ref_write *w = (ref_write *)req;
    free(w->data);
    free(w);
}

/* Encodes msg and writes it to c: one uv_write, its own copy. */
static void send_json(ref_client *c, json_t *msg) {
    if (c->closing) return;
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text) return;
    size_t n = strlen(text);
    ref_write *w = malloc(sizeof *w);
    char *data = w ? malloc(n + 1) : NULL;
    if (!data) {
        free(w);
        free(text);
        return;
    }
    memcpy(data, text, n);
    data[n] = '\n';
    free(text);
    w->data = data;
    uv_buf_t buf = uv_buf_init(data, (unsigned)(n + 1));
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written) < 0) {
        free(data);
        free(w);
    }
}

static void send_error(ref_client *c, const char *code) {
    json_t *m =
        json_pack("{s:s, s:s, s:s}", "type", "error", "code", code, "message", code);
    send_json(c, m);
    json_decref(m);
}

static json_t *board_json(const eng_board *b) {
    json_t *rows = json_array();
    for (int r = 0; r < b->size; r++) {
        json_t *row = json_array();
        for (int col = 0; col < b->size; col++)
            json_array_append_new(row,
                                  json_integer((json_int_t)eng_cell_value(b, r, col)));
        json_array_append_new(rows, row);
    }
    return rows;
}

/* A player's public state, as race2048d's `player` objects. */
static json_t *player_json(const ref_client *c) {
    return json_pack("{s:I, s:s, s:o, s:I, s:I, s:I, s:s}", "id", (json_int_t)c->id,
                     "name", c->name, "board", board_json(&c->game.board), "score",
                     (json_int_t)c->game.score, "moves", (json_int_t)c->game.moves,
                     "max_tile", (json_int_t)eng_max_tile(&c->game.board), "status",
                     c->over ? "over" : "playing");
}

static void start_race(ref_client *a, ref_client *b) {
    ref_room *r = calloc(1, sizeof *r);
    if (!r) return;
    r->seat[0] = a, r->seat[1] = b;
    eng_seed seed = eng_seed_client(next_seed++);
    for (int i = 0; i < 2; i++) {
        ref_client *c = r->seat[i];
        c->room = r;
        c->over = false;
        eng_game_new(&c->game, 4, &seed);
    }
    for (int i = 0; i < 2; i++) {
        json_t *m =
            json_pack("{s:s, s:s, s:I, s:i, s:i, s:i, s:[o,o]}", "type", "start", "room",
                      "REF", "you", (json_int_t)r->seat[i]->id, "size", 4, "target", 2048,
                      "time_limit", 0, "players", player_json(a), player_json(b));
        send_json(r->seat[i], m);
        json_decref(m);
    }
}

static void leave_room(ref_client *c) {
    ref_room *r = c->room;
    if (!r) return;
    c->room = NULL;
    for (int i = 0; i < 2; i++)
        if (r->seat[i] == c) r->seat[i] = NULL;
    if (!r->seat[0] && !r->seat[1]) free(r);
}

static const char *const dir_names[4] = {"left", "right", "up", "down"};

static void on_move(ref_client *c, json_t *msg) {
    const char *dir = json_string_value(json_object_get(msg, "dir"));
    json_t *seq = json_object_get(msg, "seq");
    int d = -1;
    for (int i = 0; dir && i < 4; i++)
        if (!strcmp(dir, dir_names[i])) d = i;
    if (d < 0) {
        send_error(c, "bad_message");
        return;
    }
    if (!c->room || c->over) {
        send_error(c, "not_playing");
        return;
    }
    eng_move_result mr = eng_game_move(&c->game, (eng_dir)d, &tables);
    c->over = eng_is_over(&c->game.board);
    json_t *state = player_json(c);
    json_object_set_new(state, "type", json_string("state"));
    json_object_set(state, "seq", seq ? seq : json_null());
    json_object_set_new(state, "dir", json_string(dir));
    json_object_set_new(state, "moved", json_boolean(mr.moved));
    json_object_set_new(state, "gained", json_integer((json_int_t)mr.gained));
    json_object_set_new(state, "spawn",
                        mr.spawn.value
                            ? json_pack("{s:i, s:i, s:I}", "row", mr.spawn.row, "col",
                                        mr.spawn.col, "value", (json_int_t)mr.spawn.value)
                            : json_null());
    /* "type" first, as the load generator's fast path expects. */
    json_t *line = json_pack("{s:s}", "type", "state");
    json_object_update(line, state);
    json_decref(state);
    for (int i = 0; i < 2; i++)
        if (c->room->seat[i]) send_json(c->room->seat[i], line);
    json_decref(line);
}

static void on_line(ref_client *c, const char *text, size_t n) {
    json_t *msg = json_loadb(text, n, 0, NULL);
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (!type) {
        send_error(c, "bad_message");
    } else if (!strcmp(type, "move")) {
        on_move(c, msg);
    } else if (!strcmp(type, "hello")) {
        const char *name = json_string_value(json_object_get(msg, "name"));
        snprintf(c->name, sizeof c->name, "%s", name ? name : "anon");
        json_t *m = json_pack("{s:s, s:I, s:s, s:s, s:i}", "type", "welcome", "id",
                              (json_int_t)c->id, "name", c->name, "token",
                              "00000000000000000000000000000000", "proto", 2);
        send_json(c, m);
        json_decref(m);
    } else if (!strcmp(type, "quick")) {
        if (waiting && waiting != c) {
            ref_client *other = waiting;
            waiting = NULL;
            start_race(other, c);
        } else {
            waiting = c;
            json_t *m = json_pack("{s:s, s:i, s:i}", "type", "queued", "players", 2,
                                  "waiting", 1);
            send_json(c, m);
            json_decref(m);
        }
    } else if (!strcmp(type, "leave")) {
        leave_room(c);
        json_t *m = json_pack("{s:s}", "type", "left");
        send_json(c, m);
        json_decref(m);
    } else {
        send_error(c, "unknown_type");
    }
    json_decref(msg);
}

static void on_closed(uv_handle_t *h) {
    ref_client *c = h->data;
    free(c->line);
    free(c);
}

static void drop(ref_client *c) {
    if (c->closing) return;
    c->closing = true;
    if (waiting == c) waiting = NULL;
    leave_room(c);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h;
    static char chunk[64 * 1024];
    (void)suggested;
    *buf = uv_buf_init(chunk, sizeof chunk);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    ref_client *c = s->data;
    if (nread < 0) {
        drop(c);
        return;
    }
    const char *p = buf->base, *end = buf->base + nread;
    while (p < end && !c->closing) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t take = (size_t)((nl ? nl : end) - p);
        if (c->len + take > 65536) {
            drop(c);
            return;
        }
        if (c->len + take > c->cap) {
            size_t cap = (c->len + take) * 2;
            char *line = realloc(c->line, cap);
            if (!line) {
                drop(c);
                return;
            }
            c->line = line, c->cap = cap;
        }
        memcpy(c->line + c->len, p, take);
        c->len += take;
        p += take;
        if (!nl) break;
        p++;
        if (c->len) on_line(c, c->line, c->len);
        c->len = 0;
    }
}

static void on_connection(uv_stream_t *server, int status) {
    if (status < 0) return;
    ref_client *c = calloc(1, sizeof *c);
    if (!c) return;
    uv_tcp_init(loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    c->id = next_id++;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* At exit: every client is dropped (its room and memory go), the rest closed. */
static void close_any(uv_handle_t *h, void *arg) {
    (void)arg;
    if (h->type == UV_TCP && h->data)
        drop(h->data);
    else if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void on_signal(uv_signal_t *h, int signum) {
    (void)signum;
    uv_stop(h->loop);
}

int main(int argc, char **argv) {
    int port = 2049;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) {
            port = atoi(argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: race2048-refserver [--port PORT]  (default 2049, 0 = any)\n"
                    "  the naive libuv + jansson reference for race2048-bench server "
                    "--mode race\n");
            return !strcmp(argv[i], "--help") ? 0 : 2;
        }
    }
    loop = uv_default_loop();
    eng_tables_init(&tables);
    uv_tcp_t server;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    uv_tcp_init(loop, &server);
    server.data = NULL; /* not a client (close_any) */
    int rc = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    if (!rc) rc = uv_listen((uv_stream_t *)&server, 4096, on_connection);
    if (rc) {
        fprintf(stderr, "race2048-refserver: %s\n", uv_strerror(rc));
        return 1;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &len);
    printf("race2048-refserver listening on 127.0.0.1:%d\n",
           ntohs(((struct sockaddr_in *)&bound)->sin_port));
    fflush(stdout);
    uv_signal_t sigterm, sigint;
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sigint);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_start(&sigint, on_signal, SIGINT);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_walk(loop, close_any, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    return uv_loop_close(loop) == 0 ? 0 : 1;
}
