/* arena_host_internal.h - what arena_host.c and arena_restore.c share: an arena's
 * state on this server, and the helpers both use. */
#ifndef RACE2048_ARENA_HOST_INTERNAL_H
#define RACE2048_ARENA_HOST_INTERNAL_H

#include <assert.h>

#include "arena.h"
#include "arena_host.h"
#include "hash.h"
#include "room_internal.h"

#define HOUR_MS        3600000LL
#define UPDATE_MS      1000 /* the standings go out at most this often */
#define CREATES_A_HOUR 5    /* arenas one address creates an hour */
#define STARTS_A_TURN  8    /* races of one pairing round started a loop turn */
/* An arena's work a loop turn (pairing, race starts, its update's slice)
 * stops once it took this long (after one start at least), so that other
 * clients are served in between. */
#define TURN_BUDGET_NS 2000000ULL

typedef struct arena_host {
    srv_link link;     /* in arena_hosts.all */
    UT_hash_handle hh; /* in arena_hosts.by_code */
    game *g;
    char code[ARENA_HOST_CODE_LEN + 1];
    char name[PROTO_ARENA_NAME_MAX + 1];
    proto_settings settings; /* the races': players, size, target, rated, arena */
    arena *a;
    bool finished;
    int64_t finished_ms;
    uv_timer_t timer; /* pairing's next_ms, the start, the end, the next update */
    struct arena_entry *by_id; /* the entrants' players here, by id */
    uint64_t sent_revision;
    /* Room for one pairing round's groups: at most entrants / 2 + 1 (every
     * group has two entrants but one lone entrant's), grown as they join. */
    arena_group *groups;
    size_t groups_cap;
    /* groups[pending_from, pending_count): formed, their rooms not started
     * yet (the next turns start them; no pairing round meanwhile). */
    size_t pending_from, pending_count;
    int64_t sent_ms;
    /* The final `arena` without `you` (finished arenas), for every reader. */
    char *final_shared;
    size_t final_len;
    /* Restored: the entrants that waited when the server stopped and have not
     * come back yet (arena_host_resume, arena_host_login), nheld of them. */
    proto_arena_rec_back *held;
    size_t nheld;
    /* The journal: bytes of the last `arena` record (the whole state) and of
     * the `arena_ev` records since; a new `arena` record is written once the
     * events outweigh it, so replay and compaction stay bounded and each
     * event costs O(1) amortised. */
    size_t state_bytes, event_bytes;
    /* The standings update being sent (arena_pace.c): its shared part and the
     * ids of the entrants it goes to, update_ids[update_next, update_n) not
     * reached yet; update_shared NULL when none is under way. */
    char *update_shared;
    size_t update_len;
    uint64_t *update_ids;
    size_t update_n, update_next;
} arena_host;

/* One address's creations in the last hour (the oldest first). */
typedef struct arena_addr {
    unsigned char key[SINK_ADDR_KEY_MAX];
    size_t len;
    int n;
    int64_t at[CREATES_A_HOUR];
} arena_addr;

struct arena_hosts {
    srv_link all;
    arena_host *by_code;
    unsigned open; /* upcoming and running: --max-arenas counts these */
    int64_t scale; /* RACE2048_TEST_ARENA_SCALE: minutes and waits divided by it */
    arena_addr *addrs;
    size_t naddrs, cap_addrs;
    uv_timer_t every; /* --arena-every's schedule */
    bool every_ready;
    /* Cluster mode: who claims each period's arena (arena_host_on_every_claim). */
    void (*every_claim)(void *ctx, game *g, int64_t starts_ms);
    void *every_claim_ctx;
};

/* A player's membership of an arena here, the side entry player.h points to
 * (p->arena): made when it enters, freed when it stops being that arena's
 * entrant's player (another arena, the player or the arena is freed). */
typedef struct arena_entry {
    arena_host *host;
    srv_player *player;
    uint64_t id; /* the player's: host->by_id's key */
    /* It has not left the arena's pool (it waits whenever connected and not
     * racing). */
    bool wants;
    UT_hash_handle hh; /* in host->by_id */
} arena_entry;

/* The arena p entered last, or NULL. */
static inline arena_host *ah_of(const srv_player *p) {
    return p->arena ? p->arena->host : NULL;
}
/* Whether p still waits in that arena's pool. */
static inline bool ah_wants(const srv_player *p) {
    return p->arena && p->arena->wants;
}
static inline void ah_set_wants(srv_player *p, bool wants) {
    assert(p->arena);
    p->arena->wants = wants;
}
/* Makes p (in no arena) an entrant's player of h, not waiting yet; false if
 * memory runs out (p is then in none). */
bool ah_entry_add(arena_host *h, srv_player *p);
/* p (in an arena) is in none any more. */
void ah_entry_remove(srv_player *p);
srv_player *ah_entrant_player(arena_host *h, uint64_t id);
arena_host *ah_find(game *g, const char *code);
bool ah_groups_room(arena_host *h, size_t n);
arena_host *ah_host_add(game *g, const char *name, const proto_settings *settings,
                        const char *code, arena *a);
void ah_host_free(arena_host *h);
struct arena_hosts *ah_hosts_of(game *g);
void ah_kick(arena_host *h);
int64_t ah_now_ms(void);
/* An arena as `arenas` lists it (no standings). */
proto_arena_info ah_info_of(const arena_host *h, int64_t now);
char *ah_shared_line(const arena_host *h, size_t max, size_t *len);
/* Sends p the arena: the shared part and p's own row if it is an entrant. */
void ah_send_arena(arena_host *h, srv_player *p, const char *shared, size_t len);
/* arena_pace.c: the start of a turn's work, and whether its budget is left. */
uint64_t ah_turn_begin(void);
bool ah_turn_budget_left(uint64_t since_ns);
/* Begins an update to the connected entrants with shared (malloc'd: taken,
 * freed on failure); false if memory ran out. None may be under way. */
bool ah_update_begin(arena_host *h, char *shared, size_t len);
/* Sends the update under way to its next entrants within the budget of the
 * turn begun at since_ns (UPDATE_SLICE_MIN at least, UPDATE_SLICE_MAX at most); true
 * while some remain. */
bool ah_update_step(arena_host *h, uint64_t since_ns);
/* The standings to every entrant at most every UPDATE_MS once they changed,
 * in slices (ah_update_step) begun after the turn's race starts: returns when
 * the arena's timer must run next, given next (its pairing's, start's, end's). */
int64_t ah_update_pace(arena_host *h, int64_t now, int64_t next, uint64_t turn0);
/* Gives up the update under way, if any. */
void ah_update_free(arena_host *h);
/* One arena from its record and the `arena_ev` lines after it (arena_restore.c,
 * as at start-up): false if it could not be restored. */
bool ah_restore_record(game *g, const proto_arena_record *rec, const char *events,
                       size_t events_len, int64_t now);
/* The arena's whole state to the journal (an `arena` record). */
void ah_record(arena_host *h);
/* One event to the journal (an `arena_ev` record; e's code is set here). */
void ah_event(arena_host *h, proto_arena_event *e);
/* An `in` event for entrant p (its token's hash and account, to come back by). */
void ah_event_in(arena_host *h, const srv_player *p);
/* An `out` event: entrant id left the pool. */
void ah_event_out(arena_host *h, uint64_t id);
/* Sends p the arena (its own row if an entrant), or an error. */
void ah_reply_arena(arena_host *h, srv_player *p);
/* Restart or takeover, once the rooms are rebuilt: gives up h's races that no
 * rebuilt room claimed (arena_restore.c), each an event after h's base. */
void ah_abandon_unclaimed(arena_host *h, int64_t now);
/* Forgets entrant id's held claim, if it has one (it is here again). */
void ah_held_drop(arena_host *h, uint64_t id);
/* Pairing, the start, the end and the next update: an arena's one timer. */
void ah_on_timer(uv_timer_t *t);

#endif
