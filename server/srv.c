/* srv.c - the server's small shared services: logging, shared buffers, sending,
 * randomness, SHA-256. */
#include "srv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "conn.h"

/* ------------------------------------------------------------------ log --- */

static srv_log_level log_threshold = SRV_LOG_INFO;

void srv_log_set_level(srv_log_level level) {
    log_threshold = level;
}

void srv_log(srv_log_level level, const char *fmt, ...) {
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (level > log_threshold) return;
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%s %s ", when, names[level]);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* -------------------------------------------------------------- buffers --- */

srv_buf *srv_buf_take(char *data, size_t len) {
    if (!data) return NULL;
    srv_buf *b = malloc(sizeof *b);
    if (!b) {
        free(data);
        return NULL;
    }
    *b = (srv_buf){.refs = 1, .len = len, .data = data};
    return b;
}

void srv_buf_unref(srv_buf *b) {
    if (--b->refs) return;
    free(b->data);
    free(b);
}

/* -------------------------------------------------------------- sending --- */

void srv_send(srv_player *p, const srv_msg *m) {
    if (p->conn) conn_deliver(p->conn, m);
}

void srv_send_line(srv_player *p, srv_msg_type type, char *line, size_t len) {
    srv_msg m = {.type = type, .json = srv_buf_take(line, len)};
    srv_send(p, &m);
    if (m.json) srv_buf_unref(m.json);
}

void srv_count_error(srv *s, proto_err code) {
    if ((unsigned)code < SRV_METRICS_ERRORS) s->metrics.errors[code]++;
}

void srv_send_error(srv_player *p, proto_err code, const char *message) {
    if (p->conn) srv_count_error(p->srv, code);
    size_t len;
    char *line = proto_enc_error(code, message, &len);
    srv_msg m = {.type = SRV_MSG_ERROR,
                 .json = srv_buf_take(line, len),
                 .error = code,
                 .text = message};
    srv_send(p, &m);
    if (m.json) srv_buf_unref(m.json);
}

/* ----------------------------------------------------------- randomness --- */

int srv_random(void *buf, size_t len) {
    return uv_random(NULL, NULL, buf, len, 0, NULL);
}

uint32_t srv_next_seed(srv *s) {
    if (s->cfg.has_seed) return eng_rng_next_u32(&s->seed_source);
    uint32_t seed = 0;
    if (srv_random(&seed, sizeof seed) < 0) {
        /* Never expected on Linux; a clock-derived seed keeps the game going. */
        srv_log(SRV_LOG_ERROR, "the OS random source failed; seeding from the clock");
        seed = (uint32_t)uv_hrtime();
    }
    return seed;
}

int srv_random_hex(char *out, size_t n) {
    unsigned char bytes[64];
    if (n > sizeof bytes || srv_random(bytes, n) < 0) return -1;
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
    return 0;
}

int srv_commit(const char *salt, uint32_t seed, char out[65]) {
    char text[64];
    int len = snprintf(text, sizeof text, "%s:%u", salt, (unsigned)seed);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (len < 0 || (size_t)len >= sizeof text ||
        !EVP_Digest(text, (size_t)len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        return -1;
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}
