/* replay_show.c - race2048-replay's output: strings from a file made safe for a terminal,
 * and a recorded game stepped frame by frame in time linear in its moves. */
#include "replay_show.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many bytes of s make its next character (a UTF-8 sequence is kept
 * whole); *control: that character is a control character. */
static size_t char_at(const unsigned char *s, bool *control) {
    *control = s[0] < 0x20 || s[0] == 0x7f;
    if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) { /* C1 in UTF-8 */
        *control = true;
        return 2;
    }
    if (s[0] >= 0x80 && s[0] <= 0x9f) { /* a lone C1 byte (not UTF-8) */
        *control = true;
        return 1;
    }
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 1, k = 1;
    while (k < len && s[k] >= 0x80 && s[k] <= 0xbf)
        k++;
    return k;
}

size_t replay_escape(const char *in, char *out, size_t cap) {
    size_t need = 0, kept = 0;
    bool full = false;
    const unsigned char *s = (const unsigned char *)in;
    while (*s) {
        bool control;
        size_t k = char_at(s, &control);
        char piece[9];
        size_t len = k;
        if (control && k == 2)
            len = (size_t)snprintf(piece, sizeof piece, "\\x%02x\\x%02x", s[0], s[1]);
        else if (control)
            len = (size_t)snprintf(piece, sizeof piece, "\\x%02x", s[0]);
        else
            memcpy(piece, s, k);
        s += k;
        /* Whole pieces only: a cut escape would print half of \xHH. */
        if (!full && need + len < cap)
            memcpy(out + need, piece, len), kept = need + len;
        else
            full = true;
        need += len;
    }
    if (cap) out[kept] = '\0';
    return need;
}

static int escape_string(json_t *v) {
    const char *s = json_string_value(v);
    size_t n = json_string_length(v), need = 0;
    if (strlen(s) != n) return json_string_setn(v, "", 0); /* NUL inside: dropped */
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        bool control;
        p += char_at(p, &control);
        need += control;
    }
    if (!need) return 0;
    size_t len = replay_escape(s, NULL, 0);
    char *escaped = malloc(len + 1);
    if (!escaped) return -1;
    replay_escape(s, escaped, len + 1);
    int rc = json_string_set(v, escaped);
    free(escaped);
    return rc;
}

int replay_escape_json(json_t *v) {
    if (json_is_string(v)) return escape_string(v);
    const char *key;
    json_t *each;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, key, each) {
            if (replay_escape_json(each) < 0) return -1;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, each) {
            if (replay_escape_json(each) < 0) return -1;
        }
    }
    return 0;
}

int replay_frames_init(replay_frames *f, int n, const char *const *moves,
                       const size_t *lens, int size, const eng_seed *seed) {
    if (n < 1 || n > PROTO_PLAYERS_MAX) return -1;
    memset(f, 0, sizeof *f);
    f->n = n;
    for (int i = 0; i < n; i++) {
        f->moves[i] = moves[i];
        f->len[i] = lens[i];
        if (lens[i] > f->longest) f->longest = lens[i];
        if (eng_game_new(&f->games[i], size, seed) < 0) return -1;
    }
    return 0;
}

size_t replay_frames_next(replay_frames *f) {
    if (f->step >= f->longest) return 0;
    size_t read = 0;
    for (int i = 0; i < f->n; i++) {
        if (f->step >= f->len[i]) continue;
        eng_dir d;
        read++;
        if (proto_dir_from_letter(f->moves[i][f->step], &d) == 0)
            eng_game_move(&f->games[i], d, NULL);
    }
    f->step++;
    return read;
}
