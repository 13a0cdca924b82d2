/* test_replay.c - race2048-replay and a hostile file: no control byte from the file
 * reaches the terminal in any mode; --show steps a game reading each move once. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "replay_show.h"
#include "seed.h"

/* ------------------------------------------------------------ escaping --- */

/* True if s (n bytes) has a C0 byte other than those listed in allowed, DEL,
 * or a C1 character (in UTF-8, or a byte 0x80..0x9F outside a sequence). */
static bool has_control(const char *s, size_t n, const char *allowed) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        if ((u[i] < 0x20 && !(u[i] && strchr(allowed, u[i]))) || u[i] == 0x7f)
            return true;
        if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            return true;
        if (u[i] >= 0x80 && u[i] <= 0x9f) return true; /* not after a lead byte */
        size_t more = u[i] >= 0xf0 ? 3 : u[i] >= 0xe0 ? 2 : u[i] >= 0xc0 ? 1 : 0;
        while (more-- && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0xbf)
            i++; /* the rest of a UTF-8 sequence */
    }
    return false;
}

static void test_escape(void **state) {
    (void)state;
    char out[128];
    assert_int_equal(replay_escape("plain é ─ €", out, sizeof out),
                     strlen("plain é ─ €"));
    assert_string_equal(out, "plain é ─ €");
    replay_escape("a\x1b]0;title\x07"
                  "b\x7f\xc2\x9b"
                  "31m\xc2\xa0\x85",
                  out, sizeof out);
    assert_string_equal(out, "a\\x1b]0;title\\x07b\\x7f\\xc2\\x9b31m\xc2\xa0\\x85");
    assert_false(has_control(out, strlen(out), ""));
    /* Cut at a whole escape, and the length the whole text would take. */
    assert_int_equal(replay_escape("ab\x1b", out, 6), 6);
    assert_string_equal(out, "ab");
    /* Every string of a record, however deep; keys stay. */
    json_t *rec = json_pack("{s:s,s:[{s:s}],s:{s:s}}", "room", "\x1b[2J", "results",
                            "name", "x\x1b[31m", "moves", "1", "l\x1br");
    assert_int_equal(replay_escape_json(rec), 0);
    char *dump = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(dump, "{\"moves\":{\"1\":\"l\\\\x1br\"},\"results\":[{\"name\":"
                              "\"x\\\\x1b[31m\"}],\"room\":\"\\\\x1b[2J\"}");
    free(dump);
    json_decref(rec);
}

/* --show's frames read each move once: moves given without a terminating
 * NUL (ASan would catch a strlen), and the letters read over the whole game
 * are the moves there are, however long the game. */
static void test_frames_read_each_move_once(void **state) {
    (void)state;
    eng_seed seed = eng_seed_client(7);
    for (size_t n = 1000; n <= 64000; n *= 4) {
        char *a = malloc(n), *b = malloc(n / 2); /* exactly the moves: no NUL */
        assert_non_null(a);
        assert_non_null(b);
        for (size_t i = 0; i < n; i++)
            a[i] = "ludr"[i % 4];
        for (size_t i = 0; i < n / 2; i++)
            b[i] = "rdlu"[i % 4];
        const char *moves[2] = {a, b};
        size_t lens[2] = {n, n / 2};
        replay_frames f;
        assert_int_equal(replay_frames_init(&f, 2, moves, lens, 4, &seed), 0);
        size_t frames = 0, read = 0, got;
        while ((got = replay_frames_next(&f)) > 0) {
            frames++;
            read += got;
        }
        assert_int_equal(frames, n);
        assert_int_equal(read, n + n / 2);
        assert_int_equal(f.step, n);
        free(a);
        free(b);
    }
}

/* --------------------------------------------------------- the program --- */

typedef struct run_result {
    int status;
    char *out;
    size_t nout;
} run_result;

/* Runs race2048-replay with args; stdout collected (stderr to /dev/null). */
static void run_replay(run_result *r, const char *const *args) {
    const char *bin = getenv("RACE2048_REPLAY");
    if (!bin) fail_msg("RACE2048_REPLAY is not set");
    const char *argv[16] = {bin};
    int argc = 1;
    for (int i = 0; args[i] && argc < 15; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0) fail_msg("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(out[1], 1);
        dup2(devnull, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    memset(r, 0, sizeof *r);
    size_t cap = 0;
    for (;;) {
        if (r->nout + 4096 > cap) {
            cap = cap ? cap * 2 : 65536;
            r->out = realloc(r->out, cap + 1);
            assert_non_null(r->out);
        }
        ssize_t got = read(out[0], r->out + r->nout, cap - r->nout);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        r->nout += (size_t)got;
    }
    r->out[r->nout] = '\0';
    close(out[0]);
    int status;
    waitpid(pid, &status, 0);
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A finished-game record whose seed, salt and commit check out (so the
 * checks go on to the strings), with these fields from the file. */
static json_t *record(json_t *id, const char *room, const char *name, const char *status,
                      const char *moves, const char *reason) {
    eng_seed seed = eng_seed_client(42);
    const char *salt = "0123456789abcdef0123456789abcdef";
    char commit[PROTO_COMMIT_TEXT];
    assert_int_equal(proto_commit(salt, &seed, commit), 0);
    eng_game g;
    assert_int_equal(eng_game_new(&g, 4, &seed), 0);
    json_t *board = json_array();
    for (int r = 0; r < 4; r++) {
        json_t *row = json_array();
        for (int c = 0; c < 4; c++)
            json_array_append_new(
                row, json_integer((json_int_t)eng_cell_value(&g.board, r, c)));
        json_array_append_new(board, row);
    }
    json_t *rec = json_pack(
        "{s:s,s:o,s:s,s:i,s:i,s:i,s:s,s:s,s:[{s:i,s:s,s:s,s:i,s:i,s:I,s:o}],s:{s:s},s:s,"
        "s:n,s:i,s:i,s:i}",
        "j", "game", "game", id, "room", room, "size", 4, "target", 2048, "seed", 42,
        "salt", salt, "commit", commit, "results", "id", 1, "name", name, "status",
        status, "score", 0, "moves", 0, "max_tile", (json_int_t)eng_max_tile(&g.board),
        "board", board, "moves", "1", moves, "reason", reason, "winner", "time_limit", 0,
        "started", 0, "ended", 0);
    assert_non_null(rec);
    return rec;
}

/* Every mode of race2048-replay on a journal whose strings carry terminal
 * escapes (a title change, a clear screen, CSI as C1, BEL, DEL): nothing
 * printed has a control byte that the file put there. */
static void test_hostile_journal(void **state) {
    (void)state;
    char path[] = "/tmp/race2048-replay-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    json_t *recs[2] = {
        record(json_integer(1), "\x1b]0;pwned\x07", "eve\x1b[2J\x1b[31m",
               "\x1b[5mplaying", "", "forfeit"),
        record(json_string("\xc2\x9b"
                           "31m2\x7f"),
               "ROOM", "bob", "playing", "\x1b", "\x1b[1mforfeit"),
    };
    for (int i = 0; i < 2; i++) {
        char *line = json_dumps(recs[i], JSON_COMPACT);
        fprintf(f, "%s\n", line);
        free(line);
        json_decref(recs[i]);
    }
    fclose(f);

    run_result r;
    /* Checking: both fail, and say why quoting the file, escaped. */
    run_replay(&r, (const char *[]){path, NULL});
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "status \\x1b[5mplaying recorded"));
    assert_non_null(strstr(r.out, "is '\\x1b'"));
    assert_non_null(strstr(r.out, "\\xc2\\x9b31m2\\x7f"));
    assert_false(has_control(r.out, r.nout, "\n"));
    free(r.out);
    /* Showing: the screens' own clear-screen, and nothing else. */
    run_replay(&r, (const char *[]){path, "--show", "1", "--delay", "0", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "eve\\x1b[2J"));
    static const char clear[] = "\x1b[H\x1b[2J";
    char *at;
    while ((at = strstr(r.out, clear)))
        memset(at, ' ', sizeof clear - 1);
    assert_false(has_control(r.out, r.nout, "\r\n"));
    free(r.out);
    /* Analysing. */
    run_replay(&r, (const char *[]){path, "--analyse", "1", NULL});
    assert_non_null(strstr(r.out, "eve\\x1b[2J"));
    assert_false(has_control(r.out, r.nout, "\n"));
    free(r.out);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_frames_read_each_move_once),
        cmocka_unit_test(test_hostile_journal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
