/* base.c - the server's bottom layer: logging, shared buffers, randomness, SHA-256. */
#include "base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <inttypes.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "hex.h"

/* ------------------------------------------------------------------ log --- */

static srv_log_level log_threshold = SRV_LOG_INFO;

void srv_log_set_level(srv_log_level level) {
    log_threshold = level;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 0)))
#endif
static void
log_line(srv_log_level level, const char *fmt, va_list ap) {
    static const char *names[] = {"error", "warn", "info", "debug"};
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%s %s ", when, names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void srv_log(srv_log_level level, const char *fmt, ...) {
    if (level > log_threshold) return;
    va_list ap;
    va_start(ap, fmt);
    log_line(level, fmt, ap);
    va_end(ap);
}

/* The budget of lines clients can cause, shared by all of them: a flood from
 * any number of connections and addresses costs at most this much log. */
static struct {
    uint64_t second;     /* monotonic second of the current window */
    unsigned lines;      /* client lines logged in it */
    uint64_t suppressed; /* client lines left out since the last report */
    uint64_t since_ms;   /* when the first of those was left out */
    uint64_t report_ms;  /* when the last report was logged */
} client_budget;

static uint64_t mono_ms(void) {
    return uv_hrtime() / 1000000;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
log_simple(srv_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_line(level, fmt, ap);
    va_end(ap);
}

/* Says how many client lines were left out, at most once a second. */
static void report_suppressed(uint64_t now) {
    if (!client_budget.suppressed || now - client_budget.report_ms < 1000) return;
    log_simple(log_threshold < SRV_LOG_WARN ? SRV_LOG_ERROR : SRV_LOG_WARN,
               "%" PRIu64 " similar lines (client errors, refusals, cut-offs) suppressed "
               "in the last %" PRIu64 " s: at most %d such lines a second are logged",
               client_budget.suppressed, (now - client_budget.since_ms + 999) / 1000,
               SRV_LOG_CLIENT_PER_S);
    client_budget.suppressed = 0;
    client_budget.report_ms = now;
}

void srv_log_client(srv_log_level level, const char *fmt, ...) {
    if (level > log_threshold) return;
    uint64_t now = mono_ms();
    if (now / 1000 != client_budget.second) {
        client_budget.second = now / 1000;
        client_budget.lines = 0;
    }
    if (client_budget.lines >= SRV_LOG_CLIENT_PER_S) {
        if (!client_budget.suppressed++) client_budget.since_ms = now;
        return;
    }
    client_budget.lines++;
    report_suppressed(now);
    va_list ap;
    va_start(ap, fmt);
    log_line(level, fmt, ap);
    va_end(ap);
}

void srv_log_client_flush(void) {
    report_suppressed(mono_ms());
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

eng_seed srv_seed_make(bool has_seed, uint32_t seed, uint64_t k) {
    uint8_t key[ENG_SEED_KEY_BYTES];
    if (has_seed) {
        char text[64];
        int len = snprintf(text, sizeof text, "race2048:%" PRIu32 ":%" PRIu64, seed, k);
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
    proto_hex_encode(bytes, n, out);
    return 0;
}
