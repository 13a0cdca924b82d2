/* journal_arena.c - the arenas in the record: each arena's latest `arena` record and
 * the `arena_ev` records after it, kept for compaction and start-up. */
#include "journal_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jrn_arena {
    char code[PROTO_ROOM_MAX + 1];
    char *line; /* malloc'd, with its '\n' */
    size_t len;
    byte_buf events; /* the `arena_ev` lines after it */
} jrn_arena;

static jrn_arena *find(const journal *j, const char *code) {
    for (size_t k = 0; k < j->narenas; k++)
        if (!strcmp(j->arenas[k].code, code)) return &j->arenas[k];
    return NULL;
}

/* Keeps line as code's latest; false if memory ran out (nothing changed). */
static bool keep(journal *j, const char *code, const char *line, size_t len) {
    char *copy = malloc(len + 1);
    if (!copy) return false;
    memcpy(copy, line, len);
    copy[len] = '\0';
    jrn_arena *a = find(j, code);
    if (!a) {
        if (j->narenas == j->arenas_cap) {
            size_t cap = j->arenas_cap ? 2 * j->arenas_cap : 8;
            jrn_arena *more = realloc(j->arenas, cap * sizeof *more);
            if (!more) {
                free(copy);
                return false;
            }
            j->arenas = more;
            j->arenas_cap = cap;
        }
        a = &j->arenas[j->narenas++];
        snprintf(a->code, sizeof a->code, "%s", code);
        a->line = NULL;
        a->events = (byte_buf){0};
    }
    free(a->line);
    a->line = copy;
    a->len = len;
    a->events.len = 0; /* the new state holds them */
    return true;
}

/* Keeps an event line after code's latest record; false if memory ran out
 * or code has none (an event without its arena is of no use). */
static bool keep_event(journal *j, const char *code, const char *line, size_t len) {
    jrn_arena *a = find(j, code);
    return a && byte_buf_append(&a->events, line, len) == 0;
}

void journal_arena_event(journal *j, const char *code, const char *line, size_t len) {
    if (!j) return;
    if (!keep_event(j, code, line, len))
        srv_log(SRV_LOG_ERROR, "journal: arena %s's event not kept", code);
    if (j->on) jrn_append(j, line, len);
}

const char *journal_arena_events(const journal *j, size_t i, size_t *len) {
    assert(i < j->narenas);
    *len = j->arenas[i].events.len;
    return (const char *)j->arenas[i].events.data;
}

void journal_arena(journal *j, const char *code, const char *line, size_t len) {
    if (!j) return;
    if (!keep(j, code, line, len))
        srv_log(SRV_LOG_ERROR, "journal: out of memory keeping arena %s", code);
    if (j->on) jrn_append(j, line, len);
}

void journal_arena_drop(journal *j, const char *code) {
    if (!j) return;
    jrn_arena *a = find(j, code);
    if (!a) return;
    free(a->line);
    byte_buf_free(&a->events);
    *a = j->arenas[--j->narenas];
}

size_t journal_arena_count(const journal *j) {
    return j ? j->narenas : 0;
}

const char *journal_arena_line(const journal *j, size_t i, size_t *len) {
    assert(i < j->narenas);
    *len = j->arenas[i].len;
    return j->arenas[i].line;
}

void jrn_arenas_replay(journal *j, const char *data, size_t len) {
    for (size_t at = 0; at < len;) {
        const char *line = data + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) + 1 : len - at;
        at += n;
        bool state = proto_rec_is(line, n, "arena");
        if (!state && !proto_rec_is(line, n, "arena_ev")) continue;
        char code[PROTO_ROOM_MAX + 1];
        if (proto_arena_record_code(line, n, code) < 0 ||
            !(state ? keep(j, code, line, n) : keep_event(j, code, line, n)))
            srv_log(SRV_LOG_WARN, "journal: an arena record could not be read");
    }
}

int jrn_arenas_out(const journal *j, byte_buf *out) {
    for (size_t k = 0; k < j->narenas; k++)
        if (byte_buf_append(out, j->arenas[k].line, j->arenas[k].len) < 0 ||
            byte_buf_append(out, j->arenas[k].events.data, j->arenas[k].events.len) < 0)
            return -1;
    return 0;
}

void jrn_arenas_free(journal *j) {
    for (size_t k = 0; k < j->narenas; k++) {
        free(j->arenas[k].line);
        byte_buf_free(&j->arenas[k].events);
    }
    free(j->arenas);
    j->arenas = NULL;
    j->narenas = j->arenas_cap = 0;
}
