/* checks.c - protocol facts the server tests check on many messages: player objects,
 * seed commitments, rankings, and boards replayed with the engine. */
#include "checks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "harness.h"

static bool lower_hex(const char *s, size_t n) {
    if (strlen(s) != n) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

static bool power_of_two(json_int_t v) {
    return v >= 2 && (v & (v - 1)) == 0;
}

void check_player(const json_t *p, int size) {
    assert_true(jint(p, "id") > 0);
    const char *name = jstr(p, "name");
    assert_true(strlen(name) >= 1 && strlen(name) <= 16);
    json_t *board = jarr(p, "board");
    assert_int_equal(json_array_size(board), size);
    json_int_t max = 0;
    for (int r = 0; r < size; r++) {
        json_t *row = json_array_get(board, (size_t)r);
        assert_true(json_is_array(row));
        assert_int_equal(json_array_size(row), size);
        for (int c = 0; c < size; c++) {
            json_t *cell = json_array_get(row, (size_t)c);
            assert_true(json_is_integer(cell));
            json_int_t v = json_integer_value(cell);
            assert_true(v == 0 || power_of_two(v));
            if (v > max) max = v;
        }
    }
    assert_true(jint(p, "score") >= 0);
    assert_true(jint(p, "moves") >= 0);
    assert_int_equal(jint(p, "max_tile"), max);
    const char *st = jstr(p, "status");
    assert_true(!strcmp(st, "playing") || !strcmp(st, "won") || !strcmp(st, "over") ||
                !strcmp(st, "left"));
}

void check_players(const json_t *list, int size) {
    assert_true(json_is_array(list));
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p) {
        check_player(p, size);
    }
}

eng_seed check_end_seed(const json_t *end) {
    json_t *v = json_object_get(end, "seed");
    eng_seed seed;
    if (json_is_string(v)) {
        const char *hex = json_string_value(v);
        if (!lower_hex(hex, 64)) fail_msg("end.seed \"%s\" is not 64 lowercase hex", hex);
        uint8_t key[ENG_SEED_KEY_BYTES];
        for (int i = 0; i < ENG_SEED_KEY_BYTES; i++) {
            unsigned byte;
            assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
            key[i] = (uint8_t)byte;
        }
        seed = eng_seed_server(key);
    } else {
        if (!json_is_integer(v)) fail_msg("end.seed is neither a string nor an integer");
        json_int_t n = json_integer_value(v);
        assert_true(n >= 0 && n <= 0xFFFFFFFFll);
        seed = eng_seed_client((uint32_t)n);
    }
    return seed;
}

void check_commit(const char *commit, const json_t *end) {
    assert_true(lower_hex(commit, 64));
    const char *salt = jstr(end, "salt");
    assert_true(lower_hex(salt, 32));
    eng_seed seed = check_end_seed(end);
    /* SEED as end wrote it: the string itself, or the number in decimal. */
    char text[128];
    json_t *v = json_object_get(end, "seed");
    int n = seed.kind == ENG_SEED_SERVER
                ? snprintf(text, sizeof text, "%s:%s", salt, json_string_value(v))
                : snprintf(text, sizeof text, "%s:%lld", salt,
                           (long long)json_integer_value(v));
    assert_true(n > 0 && (size_t)n < sizeof text);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    assert_true(EVP_Digest(text, (size_t)n, md, &mdlen, EVP_sha256(), NULL));
    assert_int_equal(mdlen, 32);
    char hex[65];
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    assert_string_equal(hex, commit);
}

/* <0 if a ranks before b, >0 after, 0 for a full tie (protocol/README.md's order). */
static int rank_cmp(const json_t *a, const json_t *b) {
    bool al = !strcmp(jstr(a, "status"), "left"), bl = !strcmp(jstr(b, "status"), "left");
    if (al != bl) return al ? 1 : -1;
    if (jint(a, "score") != jint(b, "score"))
        return jint(a, "score") > jint(b, "score") ? -1 : 1;
    if (jint(a, "max_tile") != jint(b, "max_tile"))
        return jint(a, "max_tile") > jint(b, "max_tile") ? -1 : 1;
    if (jint(a, "moves") != jint(b, "moves"))
        return jint(a, "moves") < jint(b, "moves") ? -1 : 1;
    return 0;
}

void check_ranking(const json_t *end) {
    json_t *results = jarr(end, "results");
    size_t n = json_array_size(results);
    assert_true(n >= 1);
    const char *reason = jstr(end, "reason");
    bool ranked = !strcmp(reason, "all_over") || !strcmp(reason, "time");
    assert_true(ranked || !strcmp(reason, "target") || !strcmp(reason, "forfeit"));
    /* After the head (which target and forfeit fix), the order is the ranking. */
    for (size_t i = ranked ? 0 : 1; i + 1 < n; i++)
        assert_true(
            rank_cmp(json_array_get(results, i), json_array_get(results, i + 1)) <= 0);
    json_t *first = json_array_get(results, 0);
    if (!jhas(end, "room")) { /* solo: the player is the winner */
        assert_int_equal(jint(end, "winner"), jint(first, "id"));
        return;
    }
    if (ranked) {
        bool draw = (n > 1 && rank_cmp(first, json_array_get(results, 1)) == 0) ||
                    !strcmp(jstr(first, "status"), "left");
        if (draw) {
            assert_true(jnull(end, "winner"));
            return;
        }
    }
    assert_int_equal(jint(end, "winner"), jint(first, "id"));
}

void board_of_json(const json_t *board, eng_board *out) {
    int size = (int)json_array_size(board);
    assert_int_equal(eng_board_init(out, size), 0);
    for (int r = 0; r < size; r++)
        for (int c = 0; c < size; c++) {
            json_int_t v = json_integer_value(
                json_array_get(json_array_get(board, (size_t)r), (size_t)c));
            int e = v ? eng_value_exp((uint64_t)v) : 0;
            assert_true(e >= 0);
            out->cell[r * size + c] = (uint8_t)e;
        }
}

void check_board(const json_t *board, const eng_board *b) {
    assert_int_equal(json_array_size(board), b->size);
    for (int r = 0; r < b->size; r++)
        for (int c = 0; c < b->size; c++) {
            json_int_t v = json_integer_value(
                json_array_get(json_array_get(board, (size_t)r), (size_t)c));
            if ((uint64_t)v != eng_cell_value(b, r, c))
                fail_msg("board differs at row %d col %d: server %lld, engine %llu", r, c,
                         (long long)v, (unsigned long long)eng_cell_value(b, r, c));
        }
}

void check_replay(const json_t *end, json_int_t id, const json_t *states, int size) {
    eng_game g;
    eng_seed seed = check_end_seed(end);
    assert_int_equal(eng_game_new(&g, size, &seed), 0);
    size_t i;
    json_t *st;
    json_array_foreach(states, i, st) {
        if (strcmp(jstr(st, "type"), "state") != 0 || jint(st, "id") != id ||
            !jbool(st, "moved"))
            continue;
        eng_move_result res = eng_game_move(&g, dir_of(jstr(st, "dir")), NULL);
        assert_true(res.moved);
        check_board(jarr(st, "board"), &g.board);
        json_t *spawn = json_object_get(st, "spawn");
        if (res.spawn.value) {
            assert_int_equal(jint(spawn, "row"), res.spawn.row);
            assert_int_equal(jint(spawn, "col"), res.spawn.col);
            assert_int_equal(jint(spawn, "value"), (json_int_t)res.spawn.value);
        } else {
            assert_true(json_is_null(spawn));
        }
        assert_int_equal(jint(st, "score"), (json_int_t)g.score);
        assert_int_equal(jint(st, "moves"), (json_int_t)g.moves);
    }
    json_t *mine = jplayer(jarr(end, "results"), id);
    check_board(jarr(mine, "board"), &g.board);
    assert_int_equal(jint(mine, "score"), (json_int_t)g.score);
    assert_int_equal(jint(mine, "moves"), (json_int_t)g.moves);
}

eng_dir dir_of(const char *name) {
    if (!strcmp(name, "left")) return ENG_LEFT;
    if (!strcmp(name, "right")) return ENG_RIGHT;
    if (!strcmp(name, "up")) return ENG_UP;
    if (!strcmp(name, "down")) return ENG_DOWN;
    fail_msg("no such direction: %s", name);
    return ENG_LEFT;
}
