/* main.c - race2048d: flags and environment, the listener, signals, shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "arena_host.h"
#include "bot.h"
#include "cluster.h"
#include "remote.h"
#include "session.h"
#include "conn.h"
#include "guard.h"
#include "http.h"
#include "journal.h"
#include "metrics.h"
#include "recover.h"
#include "room.h"
#include "takeover.h"
#include "accounts_kv.h"
#include "transports.h"

/* How long shutdown waits for clients to take their last bytes: a client that
 * reads takes them (and its FIN) within a few ms; only one that does not read
 * meets this deadline. The figure the docs give ("within 1 s"). */
#define SHUTDOWN_MS 1000
/* Descriptors kept beyond the connections' (files, libuv, refusals). */
#define FD_SPARE 32
#define SWEEP_MS 1000

/* ---------------------------------------------------------------- flags --- */

typedef struct flag {
    const char *name; /* without the leading dashes */
    const char *env;
    const char *arg;
    const char *help;
} flag;

static const flag flags[] = {
    {"host", "RACE2048_HOST", "ADDR", "address to listen on (default 0.0.0.0)"},
    {"port", "RACE2048_PORT", "PORT", "TCP port, 0 picks a free one (default 2048)"},
    {"http-port", "RACE2048_HTTP_PORT", "PORT",
     "port for browsers (HTTP, WebSocket only), 0 = a free one, off = none (default "
     "8048)"},
    {"seed", "RACE2048_SEED", "N",
     "derive server seeds from N, for tests (default: OS random)"},
    {"max-clients", "RACE2048_MAX_CLIENTS", "N", "connections at once (default 10000)"},
    {"max-line", "RACE2048_MAX_LINE", "BYTES",
     "longest line a client may send (default 4096)"},
    {"grace", "RACE2048_GRACE", "SECONDS",
     "how long a dropped racer's seat is kept (default 30)"},
    {"move-timeout", "RACE2048_MOVE_TIMEOUT", "SECONDS",
     "a racer with no move this long has left the race, 0 = never (default 300)"},
    {"idle-timeout", "RACE2048_IDLE_TIMEOUT", "SECONDS",
     "close connections silent this long, 0 = never (default 600)"},
    {"max-output", "RACE2048_MAX_OUTPUT", "BYTES",
     "output queued for one client before it is cut off (default 1048576)"},
    {"request-timeout", "RACE2048_REQUEST_TIMEOUT", "SECONDS",
     "close a client whose line stays unfinished this long, 0 = never (default 10)"},
    {"max-per-ip", "RACE2048_MAX_PER_IP", "N",
     "connections at once from one address (default 64)"},
    {"max-games-per-min", "RACE2048_MAX_GAMES_PER_MIN", "N",
     "games one address may start a minute, 0 = no limit (default 120)"},
    {"max-spectators", "RACE2048_MAX_SPECTATORS", "N",
     "spectators one room takes (default 500)"},
    {"max-bots", "RACE2048_MAX_BOTS", "N",
     "server-run bots at once, 0 = none (default 1000)"},
    {"max-bots-per-ip", "RACE2048_MAX_BOTS_PER_IP", "N",
     "bots the requests of one address may have at once, 0 = only --max-bots "
     "(default: an eighth of --max-bots, at least 7)"},
    {"quick-bots", "RACE2048_QUICK_BOTS", "SECONDS",
     "a quick match still short of players after this long gets bots, 0 = never "
     "(default 15)"},
    {"arena-every", "RACE2048_ARENA_EVERY", "MINUTES",
     "opens an arena every MINUTES (at multiples since 00:00 UTC) lasting MINUTES/2, "
     "0 = none (default 0)"},
    {"max-arenas", "RACE2048_MAX_ARENAS", "N",
     "arenas upcoming and running at once; beyond it arena_create gets server_full "
     "(default 100)"},
    {"proxy-from", "RACE2048_PROXY_FROM", "CIDR[,...]",
     "load balancers whose connections begin with a PROXY header (v1 or v2) naming "
     "the client, none = off (default none)"},
    {"cluster", "RACE2048_CLUSTER", "URL",
     "join a cluster of nodes over NATS, e.g. nats://127.0.0.1:4222 (default none)"},
    {"node", "RACE2048_NODE", "NAME",
     "this node's name in the cluster, unique (default: the host name)"},
    {"allow-origin", "RACE2048_ALLOW_ORIGIN", "ORIGIN,...",
     "other sites whose pages may open a WebSocket here, * = any (default none)"},
    {"metrics-from", "RACE2048_METRICS_FROM", "CIDR,...",
     "addresses /metrics answers (default loopback and private ranges)"},
    {"log-level", "RACE2048_LOG_LEVEL", "LEVEL",
     "error, warn, info or debug (default info)"},
    {"journal", "RACE2048_JOURNAL", "FILE",
     "durable record of games, none = off (default race2048.journal)"},
    {"journal-sync-ms", "RACE2048_JOURNAL_SYNC_MS", "MS",
     "longest wait before records are synced to disk (default 100)"},
    {"journal-max", "RACE2048_JOURNAL_MAX", "BYTES",
     "journal size that triggers a compaction (default 67108864)"},
};
#define NFLAGS (sizeof flags / sizeof flags[0])

/* The one line printed after a bad flag, and the first line of --help. */
#define USAGE_LINE "usage: race2048d [--help] [--version] [--FLAG VALUE]...\n"

static void usage(FILE *out) {
    fprintf(
        out, USAGE_LINE
        "\n"
        "Hosts 2048 races: JSON lines for programs, telnet/netcat for people, one port;\n"
        "browsers on a port of their own (--http-port).\n"
        "Each flag can also be set by its environment variable; a flag wins.\n\n");
    for (size_t i = 0; i < NFLAGS; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s %s", flags[i].name, flags[i].arg);
        fprintf(out, "  %-26s %s [%s]\n", left, flags[i].help, flags[i].env);
    }
    fprintf(out, "  %-26s this help\n", "--help");
    fprintf(out, "  %-26s print the version (" RACE2048_VERSION ")\n", "--version");
}

/* Parses a whole decimal number in [min, max]; returns 0 or -1. */
static int parse_uint(const char *s, unsigned long long min, unsigned long long max,
                      unsigned long long *out) {
    if (!*s || *s == '-' || *s == '+') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* Applies one setting; on a bad value prints why and returns -1. */
/* Flags that take a number in a range (times `scale`: seconds kept as ms). */
typedef struct numeric_flag {
    const char *name;
    unsigned long long lo, hi, scale;
    size_t offset, size; /* the srv_config field: 4 or 8 bytes */
    const char *want;
} numeric_flag;

#define NUMERIC(name, lo, hi, scale, field, want)                                        \
    {                                                                                    \
        name, lo, hi, scale, offsetof(srv_config, field),                                \
            sizeof(((srv_config *)0)->field), want                                       \
    }

static const numeric_flag numeric_flags[] = {
    NUMERIC("port", 0, 65535, 1, port, "a port from 0 to 65535"),
    NUMERIC("max-clients", 1, 1000000, 1, max_clients, "an integer from 1 to 1000000"),
    NUMERIC("max-line", 64, 1 << 20, 1, max_line, "a byte count from 64 to 1048576"),
    NUMERIC("grace", 0, 86400, 1000, grace_ms, "seconds from 0 to 86400"),
    NUMERIC("move-timeout", 0, 86400, 1000, move_timeout_ms, "seconds from 0 to 86400"),
    NUMERIC("idle-timeout", 0, 86400 * 7, 1000, idle_ms, "seconds from 0 to 604800"),
    NUMERIC("max-output", 4096, 1ull << 30, 1, max_output,
            "a byte count from 4096 to 1073741824"),
    NUMERIC("request-timeout", 0, 86400, 1000, request_ms, "seconds from 0 to 86400"),
    NUMERIC("max-per-ip", 1, 1000000, 1, max_per_ip, "an integer from 1 to 1000000"),
    NUMERIC("max-games-per-min", 0, 1000000, 1, max_games_per_min,
            "an integer from 0 to 1000000"),
    NUMERIC("max-spectators", 1, 1000000, 1, max_spectators,
            "an integer from 1 to 1000000"),
    NUMERIC("max-bots", 0, 100000, 1, max_bots, "an integer from 0 to 100000"),
    NUMERIC("max-bots-per-ip", 0, 100000, 1, max_bots_per_ip,
            "an integer from 0 to 100000"),
    NUMERIC("quick-bots", 0, 86400, 1000, quick_bots_ms, "seconds from 0 to 86400"),
    NUMERIC("max-arenas", 1, 100000, 1, max_arenas, "an integer from 1 to 100000"),
    NUMERIC("arena-every", 0, 1440, 1, arena_every, "minutes from 0 to 1440"),
    NUMERIC("journal-sync-ms", 1, 10000, 1, journal_sync_ms,
            "milliseconds from 1 to 10000"),
    NUMERIC("journal-max", 65536, 1ull << 40, 1, journal_max,
            "a byte count from 65536 to 1099511627776"),
};

/* Sets a numeric flag's field; returns its `want` if value is out of range,
 * NULL when set, or "" if name is no numeric flag. */
static const char *apply_numeric(srv_config *cfg, const char *name, const char *value) {
    for (size_t i = 0; i < sizeof numeric_flags / sizeof numeric_flags[0]; i++) {
        const numeric_flag *f = &numeric_flags[i];
        if (strcmp(name, f->name) != 0) continue;
        unsigned long long v;
        if (parse_uint(value, f->lo, f->hi, &v)) return f->want;
        v *= f->scale;
        char *field = (char *)cfg + f->offset;
        if (f->size == sizeof(uint32_t)) {
            uint32_t narrow = (uint32_t)v; /* int or unsigned fields: v fits */
            memcpy(field, &narrow, sizeof narrow);
        } else {
            uint64_t wide = (uint64_t)v;
            memcpy(field, &wide, sizeof wide);
        }
        return NULL;
    }
    return "";
}

/* The flags that are not a number in a range: what the value should have
 * been, or NULL once it is set. */
static const char *apply_other(srv_config *cfg, const char *name, const char *value) {
    unsigned long long v = 0;
    const char *want = NULL;
    if (!strcmp(name, "host")) {
        if (!*value || strlen(value) >= sizeof cfg->host)
            want = "an address";
        else
            snprintf(cfg->host, sizeof cfg->host, "%s", value);
    } else if (!strcmp(name, "http-port")) {
        if (!strcmp(value, "off"))
            cfg->http_port = -1;
        else if (parse_uint(value, 0, 65535, &v))
            want = "a port from 0 to 65535, or off";
        else
            cfg->http_port = (int)v;
    } else if (!strcmp(name, "seed")) {
        if (parse_uint(value, 0, UINT32_MAX, &v))
            want = "an integer from 0 to 4294967295";
        else
            cfg->has_seed = true, cfg->seed = (uint32_t)v;
    } else if (!strcmp(name, "cluster")) {
        if (strlen(value) >= sizeof cfg->cluster || strncmp(value, "nats://", 7) != 0)
            want = "a NATS URL such as nats://127.0.0.1:4222";
        else
            snprintf(cfg->cluster, sizeof cfg->cluster, "%s", value);
    } else if (!strcmp(name, "node")) {
        bool ok = *value && strlen(value) < sizeof cfg->node;
        for (const char *p = value; ok && *p; p++)
            ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9') || *p == '-' || *p == '_';
        if (!ok)
            want = "1-63 of A-Z a-z 0-9 - _";
        else
            snprintf(cfg->node, sizeof cfg->node, "%s", value);
    } else if (!strcmp(name, "journal")) {
        if (strlen(value) >= sizeof cfg->journal)
            want = "a file name";
        else
            snprintf(cfg->journal, sizeof cfg->journal, "%s",
                     !strcmp(value, "none") ? "" : value);
    } else if (!strcmp(name, "proxy-from")) {
        if (!strcmp(value, "none"))
            cfg->proxy_from.n = 0;
        else if (proto_cidr_list_parse(value, &cfg->proxy_from, NULL, 0) < 0)
            want = "addresses or ranges such as 10.0.0.0/8,::1 (at most 32), or none";
    } else if (!strcmp(name, "allow-origin")) {
        if (strlen(value) >= sizeof cfg->allow_origin ||
            proto_http_origin_list_check(value, NULL, 0) < 0)
            want = "origins such as https://example.com, comma-separated, or *";
        else
            snprintf(cfg->allow_origin, sizeof cfg->allow_origin, "%s", value);
    } else if (!strcmp(name, "metrics-from")) {
        if (proto_cidr_list_parse(value, &cfg->metrics_from, NULL, 0) < 0)
            want = "address ranges such as 10.0.0.0/8,::1, comma-separated (at most 32)";
    } else if (!strcmp(name, "log-level")) {
        static const char *levels[] = {"error", "warn", "info", "debug"};
        want = "error, warn, info or debug";
        for (int i = 0; i < 4; i++)
            if (!strcmp(value, levels[i])) cfg->log_level = (srv_log_level)i, want = NULL;
    }
    return want;
}

static int apply(srv_config *cfg, const char *name, const char *value, const char *from) {
    const char *want = apply_numeric(cfg, name, value);
    if (want && !*want) want = apply_other(cfg, name, value);
    if (!want) return 0;
    fprintf(stderr, "race2048d: %s: '%s' is not valid; expected %s\n", from, value, want);
    return -1;
}

/* Returns 0 to run, 1 to exit 0 (help, version), -1 to exit 2 (bad flags). */
static int configure(srv_config *cfg, int argc, char **argv) {
    *cfg = (srv_config){.host = "0.0.0.0",
                        .port = 2048,
                        .http_port = 8048,
                        .max_clients = 10000,
                        .max_line = 4096,
                        .grace_ms = 30000,
                        .move_timeout_ms = 300000,
                        .resume_tries = GUARD_RESUME_TRIES,
                        .resume_burst = GUARD_RESUME_BURST,
                        .resume_per_min = GUARD_RESUME_PER_MIN,
                        .idle_ms = 600000,
                        .max_output = 1 << 20,
                        .request_ms = 10000,
                        .max_per_ip = 64,
                        .max_games_per_min = GUARD_GAMES_PER_MIN,
                        .max_spectators = 500,
                        .max_bots = 1000,
                        .quick_bots_ms = 15000,
                        .max_arenas = 100,
                        .max_bots_per_ip = SRV_BOTS_PER_IP_DEFAULT,
                        .log_level = SRV_LOG_INFO,
                        .journal = "race2048.journal",
                        .journal_sync_ms = 100,
                        .journal_max = 64ull << 20};
    if (proto_cidr_list_parse(PROTO_CIDR_PRIVATE, &cfg->metrics_from, NULL, 0) < 0)
        return -1; /* cannot happen: a constant */
    for (size_t i = 0; i < NFLAGS; i++) {
        const char *v = getenv(flags[i].env);
        if (v && *v && apply(cfg, flags[i].name, v, flags[i].env) < 0) return -1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("race2048d " RACE2048_VERSION "\n");
            return 1;
        }
        const flag *f = NULL;
        const char *value = NULL;
        if (!strncmp(a, "--", 2)) {
            const char *eq = strchr(a, '=');
            size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            for (size_t k = 0; k < NFLAGS; k++)
                if (strlen(flags[k].name) == n && !strncmp(a + 2, flags[k].name, n))
                    f = &flags[k];
            if (f && eq)
                value = eq + 1;
            else if (f && i + 1 < argc)
                value = argv[++i];
        }
        if (!f) {
            fprintf(stderr, "race2048d: unknown option '%s'\n", a);
            return -1;
        }
        if (!value) {
            fprintf(stderr, "race2048d: --%s needs a value (%s)\n", f->name, f->arg);
            return -1;
        }
        char from[48];
        snprintf(from, sizeof from, "--%s", f->name);
        if (apply(cfg, f->name, value, from) < 0) return -1;
    }
    /* One socket cannot be both: the game port greets silent clients. */
    if (cfg->http_port > 0 && cfg->http_port == cfg->port) {
        fprintf(stderr,
                "race2048d: --http-port: '%d' is not valid; expected a port other "
                "than --port's, 0 or off\n",
                cfg->http_port);
        return -1;
    }
    return 0;
}

/* --------------------------------------------------------------- server --- */

static void on_connection(uv_stream_t *listener, int status) {
    srv *s = listener->data;
    if (status < 0) {
        /* libuv has already dropped the connection it could not take (its
         * own reserve descriptor): say so, but not once per connection. */
        static uint64_t last_log;
        uint64_t now = uv_now(s->loop);
        if (!last_log || now - last_log >= 10000) {
            last_log = now;
            srv_log(SRV_LOG_WARN, "accept failed: %s", uv_strerror(status));
        }
        return;
    }
    conn_accept(s, listener);
}

/* Raises the descriptor limit as far as allowed, and sizes the server's
 * capacity to it: connections past it are refused with server_full. */
static void fit_descriptors(srv *s) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t want = rl.rlim_max;
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) getrlimit(RLIMIT_NOFILE, &rl);
    }
    /* The lowest free descriptor: about how many are in use already. */
    int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (probe < 0) return;
    close(probe);
    unsigned long long limit = rl.rlim_cur == RLIM_INFINITY ? 1ull << 30 : rl.rlim_cur;
    unsigned long long used = (unsigned long long)probe + FD_SPARE;
    unsigned long long fit = limit > used ? limit - used : 1;
    s->fd_capacity = fit > 1000000 ? 1000000 : (unsigned)fit;
    if (s->fd_capacity < s->cfg->max_clients)
        srv_log(SRV_LOG_WARN,
                "the descriptor limit (%llu) leaves room for %u clients, fewer than "
                "--max-clients %u: raise it (ulimit -n) to serve that many",
                limit, s->fd_capacity, s->cfg->max_clients);
}

static void on_sweep(uv_timer_t *t) {
    conn_sweep_idle(t->data);
    srv_log_client_flush(); /* a flood that stopped still gets its count logged */
}

static void on_shutdown_deadline(uv_timer_t *t) {
    srv *s = t->data;
    for (srv_link *l = s->conns.next; l != &s->conns; l = l->next)
        conn_close(srv_container(l, conn, link));
}

/* The process: the server's state and cluster mode's failover, which the
 * layers keep apart (takeover.c is below the connections' srv). */
typedef struct process {
    srv *s;
    takeover *failover; /* NULL without --cluster */
} process;

static void process_stop(process *pr) {
    srv *s = pr->s;
    if (s->stopping) return;
    s->stopping = true;
    srv_log(SRV_LOG_INFO, "stopping: %u connections to close", s->nconns);
    for (int i = 0; i < s->nlisteners; i++)
        uv_close((uv_handle_t *)&s->listeners[i], NULL);
    for (int i = 0; i < s->nhttp_listeners; i++)
        uv_close((uv_handle_t *)&s->http_listeners[i], NULL);
    takeover_stop(pr->failover); /* nothing more is claimed while stopping */
    room_close_all(&s->game);
    bots_stop(&s->game);
    for (srv_link *l = s->conns.next; l != &s->conns; l = l->next)
        conn_say_bye(srv_container(l, conn, link));
    /* `end`s held for the journal (and the byes queued behind them) are
     * released by a commit now, not by one up to --journal-sync-ms away. */
    journal_commit_now(s->journal);
    /* Clients that do not read their bye are cut off; the timer alone does
     * not keep the loop running. */
    uv_timer_start(&s->sweep, on_shutdown_deadline, SHUTDOWN_MS, 0);
    uv_unref((uv_handle_t *)&s->sweep);
}

static void on_signal(uv_signal_t *h, int signum) {
    process *pr = h->data;
    if (pr->s->stopping) {
        fprintf(stderr, "race2048d: second signal, exiting at once\n");
        _exit(1);
    }
    process_stop(pr);
}

/* Port of a bound IPv4 or IPv6 address. */
static int sockaddr_port(const struct sockaddr *a) {
    return ntohs(a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
                                          : ((const struct sockaddr_in *)a)->sin_port);
}

static void sockaddr_set_port(struct sockaddr *a, int port) {
    if (a->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)a)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)a)->sin_port = htons((uint16_t)port);
}

/* "1.2.3.4:PORT" or "[::1]:PORT", as clients write it. */
static void format_endpoint(const struct sockaddr *a, int port, char *out, size_t len) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a->sa_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)a, ip, sizeof ip);
        snprintf(out, len, "[%s]:%d", ip, port);
    } else {
        uv_ip4_name((const struct sockaddr_in *)a, ip, sizeof ip);
        snprintf(out, len, "%s:%d", ip, port);
    }
}

/* True if an earlier entry of the list holds the same address (resolvers
 * repeat an address when /etc/hosts names it twice). */
static bool seen_before(const struct addrinfo *list, const struct addrinfo *ai) {
    for (const struct addrinfo *p = list; p != ai; p = p->ai_next)
        if (p->ai_family == ai->ai_family && p->ai_addrlen == ai->ai_addrlen &&
            !memcmp(p->ai_addr, ai->ai_addr, ai->ai_addrlen))
            return true;
    return false;
}

/* Binds and listens on one address, as the next of the n listeners in
 * `set`; returns 0 or a libuv error. */
static int listen_one(srv *s, uv_tcp_t *set, int *n, const struct sockaddr *addr,
                      unsigned bind_flags) {
    uv_tcp_t *l = &set[*n];
    uv_tcp_init(s->loop, l);
    l->data = s;
    int rc = uv_tcp_bind(l, addr, bind_flags);
    if (rc == 0) rc = uv_listen((uv_stream_t *)l, 511, on_connection);
    if (rc < 0) {
        uv_close((uv_handle_t *)l, NULL);
        return rc;
    }
    (*n)++;
    return 0;
}

/* Listens on port at every address of the list that can be bound, as the
 * listeners `set` (n of them open): with port 0 the first bind picks it and
 * the others reuse it. Appends one `PREFIX ADDR:PORT` line per address to
 * lines. Returns how many addresses it listens on. */
static int listen_port(srv *s, const struct addrinfo *list, int port, uv_tcp_t *set,
                       int *n, const char *prefix, char *lines, size_t size) {
    /* An IPv6 socket also takes IPv4 unless told not to; when the name has
     * both families, each address gets its own socket. */
    bool has_ipv4 = false;
    for (const struct addrinfo *ai = list; ai; ai = ai->ai_next)
        has_ipv4 |= ai->ai_family == AF_INET;
    for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        if (seen_before(list, ai)) continue;
        char where[INET6_ADDRSTRLEN + 16];
        if (*n == SRV_MAX_LISTENERS) {
            format_endpoint(ai->ai_addr, port, where, sizeof where);
            fprintf(stderr, "race2048d: --host '%s' has too many addresses; not on %s\n",
                    s->cfg->host, where);
            continue;
        }
        struct sockaddr_storage addr;
        memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
        sockaddr_set_port((struct sockaddr *)&addr, port);
        format_endpoint((struct sockaddr *)&addr, port, where, sizeof where);
        unsigned bind_flags = ai->ai_family == AF_INET6 && has_ipv4 ? UV_TCP_IPV6ONLY : 0;
        int rc = listen_one(s, set, n, (struct sockaddr *)&addr, bind_flags);
        if (rc < 0) {
            fprintf(stderr, "race2048d: cannot listen on %s: %s\n", where,
                    uv_strerror(rc));
            continue;
        }
        if (port == 0) {
            struct sockaddr_storage bound;
            int len = sizeof bound;
            uv_tcp_getsockname(&set[*n - 1], (struct sockaddr *)&bound, &len);
            port = sockaddr_port((struct sockaddr *)&bound);
            format_endpoint((struct sockaddr *)&addr, port, where, sizeof where);
        }
        size_t used = strlen(lines);
        snprintf(lines + used, size - used, "%s %s\n", prefix, where);
    }
    return *n;
}

/* Resolves --host (an address or a name such as localhost) and listens on
 * every address it yields that can be bound, IPv4 and IPv6: the game port,
 * then --http-port on the same addresses. Prints one `race2048d listening on
 * ADDR:PORT` line per address, then one `race2048d http on ADDR:PORT` per
 * address, all at once, so the first line is there for whoever waits on it
 * and the http lines follow it. Returns 0 or -1. */
static int listen_all(srv *s) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    uv_getaddrinfo_t req;
    int rc = uv_getaddrinfo(s->loop, &req, NULL, s->cfg->host, NULL, &hints);
    if (rc < 0) {
        fprintf(stderr, "race2048d: cannot resolve --host '%s': %s\n", s->cfg->host,
                uv_strerror(rc));
        return -1;
    }
    char lines[2 * SRV_MAX_LISTENERS * 80] = "";
    int game_port =
        listen_port(s, req.addrinfo, s->cfg->port, s->listeners, &s->nlisteners,
                    "race2048d listening on", lines, sizeof lines);
    /* Browsers were told this port: without it they would be sent to the
     * game port's greeting, so a port that cannot be had stops the start. */
    int http =
        game_port && s->cfg->http_port >= 0
            ? listen_port(s, req.addrinfo, s->cfg->http_port, s->http_listeners,
                          &s->nhttp_listeners, "race2048d http on", lines, sizeof lines)
            : 0;
    uv_freeaddrinfo(req.addrinfo);
    if (game_port == 0) {
        fprintf(stderr, "race2048d: no address of --host '%s' could be listened on\n",
                s->cfg->host);
        return -1;
    }
    if (s->cfg->http_port >= 0 && http == 0) {
        fprintf(stderr,
                "race2048d: no address of --host '%s' could take --http-port %d "
                "(0 picks a free one, off turns it off)\n",
                s->cfg->host, s->cfg->http_port);
        return -1;
    }
    fputs(lines, stdout);
    fflush(stdout);
    return 0;
}

/* --cluster: joins before anything listens; NATS out of reach is exit 1.
 * *failover: the cluster's failover (takeover.c), made here. */
/* A cluster node needs a name: --node, else the host's name, else node-PID. */
static void name_node(srv_config *cfg) {
    if (!cfg->node[0] && (gethostname(cfg->node, sizeof cfg->node) < 0 || !cfg->node[0]))
        snprintf(cfg->node, sizeof cfg->node, "node-%d", (int)getpid());
    cfg->node[sizeof cfg->node - 1] = '\0';
}

static int join_cluster(srv *s, takeover **failover) {
    char err[256];
    s->cluster = cluster_open(s->cfg->cluster, s->cfg->node, err, sizeof err);
    if (!s->cluster) {
        fprintf(stderr, "race2048d: --cluster %s: %s\n", s->cfg->cluster, err);
        return -1;
    }
    /* Player ids never collide across nodes nor starts: blocks of the
     * cluster's counter (short ids: default names hold them whole). */
    uint64_t limit;
    s->game.next_id = cluster_first_ids(s->cluster, &limit);
    s->game.id_limit = limit;
    s->game.ids = (game_ids){.more = cluster_next_ids, .ctx = s->cluster};
    s->game.node_number = cluster_node_number(s->cluster);
    metrics_register(&s->metrics_reg, cluster_write_metrics, s->cluster);
    *failover = takeover_new(s->cluster);
    if (!*failover) {
        fprintf(stderr, "race2048d: out of memory\n");
        return -1;
    }
    metrics_register(&s->metrics_reg, takeover_write_metrics, *failover);
    srv_log(SRV_LOG_INFO, "node %s (number %u) joined the cluster at %s", s->cfg->node,
            cluster_node_number(s->cluster), s->cfg->cluster);
    return 0;
}

/* Cluster mode: other nodes' rooms and players, once the record's games are
 * back (the directory lists them). */
static int open_remote(srv *s, takeover *failover) {
    if (!s->cluster) return 0;
    char err[256];
    if (!(s->remote = remote_open(&s->game, s->cluster, err, sizeof err))) {
        fprintf(stderr, "race2048d: --cluster %s: %s\n", s->cfg->cluster, err);
        return -1;
    }
    takeover_set_remote(failover, s->remote);
    remote_on_resume_failed(s->remote, session_remote_resume_failed);
    remote_on_resume_here(s->remote, session_remote_resume_here);
    /* --arena-every: each period's arena is claimed; one node opens it. */
    if (s->cfg->arena_every) {
        if (remote_arena_every(s->remote) < 0) {
            fprintf(stderr, "race2048d: --cluster %s: the arenas' bucket (NATS KV %s)\n",
                    s->cfg->cluster, ARENA_EVERY_BUCKET);
            return -1;
        }
        arena_host_schedule(&s->game);
    }
    /* Accounts and daily seeds across the cluster (NATS KV). */
    if (s->game.accounts_ready &&
        !(s->accounts_kv =
              accounts_kv_open(&s->game, s->cluster, s->loop, err, sizeof err))) {
        fprintf(stderr, "race2048d: --cluster %s: %s\n", s->cfg->cluster, err);
        return -1;
    }
    if (s->accounts_kv) {
        accounts_kv_on_done(s->accounts_kv, session_kv_registered, session_kv_fetched);
        accounts_kv_on_claimed(s->accounts_kv, session_kv_claimed);
        if (metrics_register(&s->metrics_reg, accounts_kv_write_metrics, s->accounts_kv) <
            0)
            return -1;
    }
    return metrics_register(&s->metrics_reg, remote_write_metrics, s->remote);
}

static void close_any(uv_handle_t *h, void *arg) {
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

/* True if c's output waits for the journal (an `end` not yet durable). */
/* Another process holds this node's --node name (its presence entry was
 * written over): the rooms are given up already; the process stops. */
static void stop_for_lost_name(void *ctx) {
    process *pr = ctx;
    srv_log(SRV_LOG_ERROR,
            "cluster: node name %s is another process's now: stopping (exit 1); give "
            "each process its own --node NAME",
            pr->s->cfg->node);
    process_stop(pr);
}

/* The record, then the games it says were running (recover.c rebuilds them
 * through the game's functions), before anyone connects. In cluster mode a
 * node rejoins empty: its earlier incarnation's running games are taken
 * over through the cluster's records (by any node), not from the file. */
static int open_record(process *pr) {
    srv *s = pr->s;
    takeover *failover = pr->failover;
    if (!game_init_accounts(&s->game))
        srv_log(SRV_LOG_ERROR,
                "out of memory for the accounts: register and keys refused");
    journal_config jc = {.path = s->cfg->journal,
                         .sync_ms = s->cfg->journal_sync_ms,
                         .max = s->cfg->journal_max,
                         .next_player_id = &s->game.next_id,
                         .replicate = failover ? takeover_replicate : NULL,
                         .replicate_ctx = failover,
                         .accounts = s->game.accounts_ready ? &s->game.accounts : NULL,
                         .daily = s->game.accounts_ready ? &s->game.daily : NULL,
                         .daily_offset_ms = s->game.daily_offset_ms};
    jrn_recovery rec;
    int rc = journal_open(&s->journal, s->loop, &jc, &rec);
    s->game.journal = s->journal;
    if (rc == 0 && s->cluster) {
        journal_set_next_game(s->journal, cluster_id_base(s->cluster) + 1);
        if (rec.ngames)
            srv_log(SRV_LOG_INFO,
                    "journal %s: %zu running games left to the cluster's takeover (a "
                    "node rejoins empty)",
                    journal_path(s->journal), rec.ngames);
    } else if (rc == 0) {
        arena_host_restore(&s->game); /* first: the running races rejoin their arenas */
        recover_games(&s->game, &rec);
        arena_host_restored(&s->game);
        arena_host_schedule(&s->game); /* --arena-every */
    }

    journal_recovery_free(&rec);
    if (rc == 0 && failover && takeover_start(failover, &s->game, s->loop) < 0) {
        fprintf(stderr, "race2048d: cannot start the cluster's takeover\n");
        return -1;
    }
    if (rc == 0 && failover) {
        takeover_on_fence(failover, conn_close_for_fence, s);
        takeover_on_name_lost(failover, stop_for_lost_name, pr);
    }
    return rc;
}

int main(int argc, char **argv) {
    static srv s; /* large and single: not on the stack */
    /* The one config: filled here, then read-only, shared by pointer
     * (srv.cfg, game.cfg). */
    static srv_config config;
    int rc = configure(&config, argc, argv);
    if (rc < 0) fputs(USAGE_LINE, stderr);
    if (rc) return rc > 0 ? 0 : 2;
    if (config.cluster[0]) name_node(&config);
    srv_log_set_level(config.log_level);
    signal(SIGPIPE, SIG_IGN);
    /* A file size limit makes a journal write fail (EFBIG), not the server die. */
    signal(SIGXFSZ, SIG_IGN);

    eng_tables *tables = malloc(sizeof *tables);
    if (!tables) {
        fprintf(stderr, "race2048d: out of memory\n");
        return 1;
    }
    eng_tables_init(tables);
    srv_init(&s, uv_default_loop(), &config, tables);
    transports_install(&s);

    /* Signals are caught before the `listening on` line is printed: whoever
     * reads it may stop the server at once, and must get a clean exit. */
    uv_signal_init(s.loop, &s.sigterm);
    uv_signal_init(s.loop, &s.sigint);
    process proc = {.s = &s}; /* lives as long as the loop runs */
    s.sigterm.data = s.sigint.data = &proc;
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    uv_unref((uv_handle_t *)&s.sigterm);
    uv_unref((uv_handle_t *)&s.sigint);

    int exit_code = 0;
    if (s.cfg->cluster[0] && join_cluster(&s, &proc.failover) < 0) {
        free(tables);
        return 1;
    }
    /* Bots first: the journal may restore some that were racing. */
    if (s.cfg->max_bots && bots_start(&s.game) < 0)
        srv_log(SRV_LOG_ERROR, "cannot start the bots' worker: no bots on this server");
    if (open_record(&proc) < 0) {
        exit_code = 1;
    } else if (metrics_register(&s.metrics_reg, journal_write_metrics, s.journal) < 0) {
        exit_code = 1;
    } else if (open_remote(&s, proc.failover) < 0) {
        exit_code = 1;
    } else if (listen_all(&s) < 0) {
        exit_code = 1;
    } else {
        fit_descriptors(&s);
        conn_loop_init(&s);
        uv_timer_init(s.loop, &s.sweep);
        s.sweep.data = &s;
        uv_timer_start(&s.sweep, on_sweep, SWEEP_MS, SWEEP_MS);
        srv_log(SRV_LOG_INFO, "race2048d %s, max %u clients, line %zu, grace %llus",
                s.cfg->has_seed ? "with a fixed seed source" : "ready",
                s.cfg->max_clients, s.cfg->max_line,
                (unsigned long long)(s.cfg->grace_ms / 1000));
        uv_run(s.loop, UV_RUN_DEFAULT);
    }
    bots_stop(&s.game);               /* if the loop never ran (start-up failed) */
    accounts_kv_close(s.accounts_kv); /* its threads stopped: NATS is still up */
    s.accounts_kv = NULL;
    remote_close(s.remote);   /* guests disconnected, homes told */
    cluster_close(s.cluster); /* a planned leave: the others see it at once */
    s.cluster = NULL;
    /* Walk-close whatever is left (signals, timers) and let the callbacks run. */
    uv_walk(s.loop, close_any, NULL);
    uv_run(s.loop, UV_RUN_DEFAULT);
    if (takeover_name_lost(proc.failover)) exit_code = 1;
    if ((rc = uv_loop_close(s.loop)) != 0) {
        srv_log(SRV_LOG_ERROR, "loop did not close cleanly: %s", uv_strerror(rc));
        exit_code = 1;
    }
    remote_free(s.remote);
    s.remote = NULL;
    journal_close(s.journal);
    s.journal = NULL;
    takeover_free(proc.failover); /* its handles closed with the loop's */
    s.game.journal = NULL;
    metrics_free(&s.metrics_reg);
    conn_timers_free(&s);
    guard_free(&s);
    game_free(&s.game);
    free(tables);
    if (exit_code == 0) srv_log(SRV_LOG_INFO, "stopped");
    return exit_code;
}
