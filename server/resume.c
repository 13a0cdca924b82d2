/* resume.c - resume codes for humans: derived per seat, indexed, looked up, rate-limited.
 */
#include "resume.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "command.h"
#include "room.h"

/* Chained buckets keyed by the code's first 40 bits; the bucket count is a
 * power of two well above the players a server holds at once. One server
 * runs per process, so the index lives here. */
#define BUCKETS 4096
static srv_player *buckets[BUCKETS];

/* The server-wide allowance: attempts made in the current one-second window. */
static uint64_t window_start;
static int window_attempts;

static unsigned bucket_of(const char *code) {
    unsigned h = 2166136261u; /* FNV-1a: the codes are random already */
    for (const char *c = code; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    return h & (BUCKETS - 1);
}

static srv_player *lookup(const char *code) {
    for (srv_player *q = buckets[bucket_of(code)]; q; q = q->resume_next)
        if (strcmp(q->resume_code, code) == 0) return q;
    return NULL;
}

void resume_code_forget(srv_player *p) {
    if (!p->resume_code[0]) return;
    for (srv_player **at = &buckets[bucket_of(p->resume_code)]; *at;
         at = &(*at)->resume_next) {
        if (*at != p) continue;
        *at = p->resume_next;
        break;
    }
    p->resume_next = NULL;
    p->resume_code[0] = '\0';
}

/* code = 8 characters of base 32 from SHA-256("resume:TOKEN:ROOM:SEAT"). */
static int derive(const srv_player *p, char code[PROTO_RESUME_CODE_LEN + 1]) {
    static const char alphabet[] = PROTO_RESUME_ALPHABET;
    char text[160];
    int len =
        snprintf(text, sizeof text, "resume:%s:%s:%d", p->token, p->room->code, p->seat);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (len < 0 || (size_t)len >= sizeof text ||
        !EVP_Digest(text, (size_t)len, md, &mdlen, EVP_sha256(), NULL) || mdlen < 5)
        return -1;
    uint64_t bits = 0;
    for (int i = 0; i < 5; i++)
        bits = bits << 8 | md[i];
    for (int i = PROTO_RESUME_CODE_LEN - 1; i >= 0; i--, bits >>= 5)
        code[i] = alphabet[bits & 31];
    code[PROTO_RESUME_CODE_LEN] = '\0';
    return 0;
}

void resume_code_assign(srv_player *p) {
    char code[PROTO_RESUME_CODE_LEN + 1];
    if (!p->room || p->room->solo || derive(p, code) < 0) {
        resume_code_forget(p);
        return;
    }
    if (strcmp(code, p->resume_code) == 0) return; /* already indexed */
    resume_code_forget(p);
    if (lookup(code)) return; /* someone else's: no code rather than a shared one */
    memcpy(p->resume_code, code, sizeof code);
    unsigned b = bucket_of(code);
    p->resume_next = buckets[b];
    buckets[b] = p;
}

srv_player *resume_code_find(srv *s, const char *code) {
    srv_player *p = lookup(code);
    if (!p || p->srv != s || !p->room) return NULL;
    const room *r = p->room;
    const room_seat *seat = &r->seats[p->seat];
    if (r->state != ROOM_RUNNING || r->solo || seat->player != p || seat->connected ||
        seat->grace_until <= uv_now(s->loop))
        return NULL;
    return p;
}

bool resume_attempt_allowed(srv *s) {
    uint64_t now = uv_now(s->loop);
    if (now >= window_start + 1000) {
        window_start = now;
        window_attempts = 0;
    }
    if (window_attempts >= RESUME_ATTEMPTS_PER_S) return false;
    window_attempts++;
    return true;
}
