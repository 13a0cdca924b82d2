/* resume.c - resume codes for humans: derived per seat, indexed, looked up, rate-limited.
 */
#include "resume.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "command.h"
#include "hash.h"
#include "journal.h"
#include "room.h"

void resume_code_forget(srv_player *p) {
    resume_entry *e = p->resume;
    if (!e) return;
    assert(e->player == p);
    HASH_DELETE(hh, p->game->by_resume, e);
    p->resume = NULL;
    free(e);
}

const char *resume_code_of(const srv_player *p) {
    return p->resume ? p->resume->code : "";
}

static srv_player *lookup(game *g, const char *code) {
    resume_entry *e = NULL;
    HASH_FIND(hh, g->by_resume, code, strlen(code), e);
    return e ? e->player : NULL;
}

/* code = 8 characters of base 32 from SHA-256("resume:SHA-256(TOKEN):ROOM:SEAT"). From
 * the token's hash, not the token, because the journal keeps only the hash: a seat
 * restored after a restart gets back the code its player saw. */
static int derive(const srv_player *p, char code[PROTO_RESUME_CODE_LEN + 1]) {
    static const char alphabet[] = PROTO_RESUME_ALPHABET;
    char token_hash[65];
    if (p->token[0]) {
        if (journal_token_hash(p->token, token_hash) < 0) return -1;
    } else if (p->token_hash && strlen(p->token_hash) == 64) {
        memcpy(token_hash, p->token_hash, sizeof token_hash);
    } else {
        return -1;
    }
    char text[160];
    int len = snprintf(text, sizeof text, "resume:%s:%s:%d", token_hash, p->room->code,
                       p->seat);
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
    if (strcmp(code, resume_code_of(p)) == 0) return; /* already indexed */
    resume_code_forget(p);
    if (lookup(p->game, code)) return; /* someone else's: none rather than a shared one */
    /* Out of memory: no code, and the seat waits out its grace. */
    resume_entry *e = malloc(sizeof *e);
    if (!e) return;
    *e = (resume_entry){.player = p};
    memcpy(e->code, code, sizeof code);
    int hash_oom = 0;
    HASH_ADD(hh, p->game->by_resume, code, strlen(e->code), e);
    if (hash_oom) {
        free(e);
        return;
    }
    p->resume = e;
}

srv_player *resume_code_find(game *g, const char *code) {
    srv_player *p = lookup(g, code);
    if (!p || !p->room) return NULL;
    const room *r = p->room;
    const room_seat *seat = &r->seats[p->seat];
    if (r->state != ROOM_RUNNING || r->solo || seat->player != p || seat->connected ||
        seat->grace_until <= uv_now(g->loop))
        return NULL;
    return p;
}

bool resume_attempt_allowed(game *g) {
    uint64_t now = uv_now(g->loop);
    if (now >= g->resume_window_start + 1000) {
        g->resume_window_start = now;
        g->resume_window_attempts = 0;
    }
    if (g->resume_window_attempts >= RESUME_ATTEMPTS_PER_S) return false;
    g->resume_window_attempts++;
    return true;
}
