/* srv.c - the server's small shared services: logging, shared buffers, sending,
 * randomness, SHA-256. */
#include "srv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <inttypes.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "conn.h"
#include "fanout.h"

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
    /* A spectator first gets the broadcasts still queued for it. */
    if (p->watching) fanout_catch_up(p);
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

/* key = SHA-256 of text; returns false if libcrypto fails. */
static bool sha256_key(const char *text, size_t len, uint8_t key[ENG_SEED_KEY_BYTES]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        return false;
    memcpy(key, md, ENG_SEED_KEY_BYTES);
    return true;
}

eng_seed srv_next_seed(srv *s) {
    uint8_t key[ENG_SEED_KEY_BYTES];
    uint64_t k = s->seeds_made++;
    if (s->cfg.has_seed) {
        char text[64];
        int len =
            snprintf(text, sizeof text, "race2048:%" PRIu32 ":%" PRIu64, s->cfg.seed, k);
        if (len > 0 && (size_t)len < sizeof text && sha256_key(text, (size_t)len, key))
            return eng_seed_server(key);
        srv_log(SRV_LOG_ERROR, "cannot derive a seed from --seed; using the OS");
    }
    if (srv_random(key, sizeof key) == 0 || RAND_bytes(key, (int)sizeof key) == 1)
        return eng_seed_server(key);
    /* Never expected on Linux (two independent sources failed). The game goes
     * on, verifiable but guessable; say so loudly. */
    srv_log(SRV_LOG_ERROR, "no random source works; this game's seed is guessable");
    char text[64];
    int len = snprintf(text, sizeof text, "%" PRIu64 ":%" PRIu64, uv_hrtime(), k);
    if (len < 0 || !sha256_key(text, (size_t)len, key)) memset(key, 0, sizeof key);
    return eng_seed_server(key);
}

int srv_random_hex(char *out, size_t n) {
    unsigned char bytes[64];
    if (n > sizeof bytes || srv_random(bytes, n) < 0) return -1;
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
    return 0;
}
