/* view.c - what messages show of a room and of the rooms list: refcounted snapshots
 * that own their data, for the transports that draw them (text mode). */
#include "view.h"

#include <stdlib.h>
#include <string.h>

#include "base.h"

srv_view *srv_view_new(int nseats) {
    if (nseats < 0 || nseats > PROTO_PLAYERS_MAX) return NULL;
    srv_view *v = calloc(1, sizeof *v + (size_t)nseats * sizeof v->seats[0]);
    if (!v) return NULL;
    v->refs = 1;
    v->nseats = nseats;
    return v;
}

void srv_view_unref(srv_view *v) {
    if (!v || --v->refs) return;
    for (unsigned i = 0; v->screens && i < SRV_VIEW_SCREENS; i++) {
        if (v->screens[i].screen) srv_buf_unref(v->screens[i].screen);
        free(v->screens[i].key);
    }
    free(v->screens);
    free(v);
}

void srv_view_set(srv_view **slot, srv_view *v) {
    if (*slot == v) return;
    if (v) srv_view_ref(v);
    srv_view_unref(*slot);
    *slot = v;
}

const srv_view_seat *srv_view_seat_of(const srv_view *v, uint64_t id) {
    for (int i = 0; v && i < v->nseats; i++)
        if (v->seats[i].id == id) return &v->seats[i];
    return NULL;
}

void srv_view_player(const srv_view_seat *seat, proto_player *out) {
    *out = proto_player_of(&seat->result);
}

/* ------------------------------------------------------------ renderings --- */

srv_buf *srv_view_screen_find(const srv_view *v, const void *key, size_t key_len,
                              uint64_t *tick_at) {
    for (unsigned i = 0; v->screens && i < SRV_VIEW_SCREENS; i++) {
        const srv_view_screen *e = &v->screens[i];
        if (e->key && e->key_len == key_len && !memcmp(e->key, key, key_len)) {
            *tick_at = e->tick_at;
            return e->screen;
        }
    }
    return NULL;
}

void srv_view_screen_keep(srv_view *v, const void *key, size_t key_len, srv_buf *screen,
                          uint64_t tick_at) {
    if (!v->screens && !(v->screens = calloc(SRV_VIEW_SCREENS, sizeof *v->screens)))
        return;
    srv_view_screen *e = &v->screens[v->next_screen];
    if (!e->key || e->key_len != key_len) {
        void *k = realloc(e->key, key_len);
        if (!k) return;
        e->key = k;
        e->key_len = key_len;
    }
    memcpy(e->key, key, key_len);
    if (e->screen) srv_buf_unref(e->screen);
    e->screen = srv_buf_ref(screen);
    e->tick_at = tick_at;
    v->next_screen = (v->next_screen + 1) % SRV_VIEW_SCREENS;
}

/* ------------------------------------------------------- the rooms list --- */

srv_rooms *srv_rooms_new(int n) {
    if (n < 0) return NULL;
    srv_rooms *l = calloc(1, sizeof *l + (size_t)n * sizeof l->rows[0]);
    if (!l) return NULL;
    l->refs = 1;
    l->n = n;
    return l;
}

void srv_rooms_unref(srv_rooms *l) {
    if (l && --l->refs == 0) free(l);
}
