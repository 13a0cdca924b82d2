/* test_server_budget.c - budgets per address against the real race2048d: a solo/leave
 * spammer is rate-limited and cannot push a victim's race out of history, games nobody
 * played are not listed, and a resume-code attacker cannot lock out a victim racer on
 * another address. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "harness.h"
#include "tt.h"

/* The server's default --max-games-per-min, passed explicitly (the harness
 * turns the limit off for the other tests). */
#define GAMES_PER_MIN 120
#define SCREEN        16384

static const char *dir;

static int setup_dir(void **state) {
    (void)state;
    dir = harness_temp_dir("budget");
    return 0;
}

static const char *journal_path(void) {
    static char path[128];
    snprintf(path, sizeof path, "%s/j", dir);
    return path;
}

/* The last screen a failed wait saw, as plain text. */
static char screen_text[SCREEN];

/* -------------------------------------------------------- games per address --- */

/* What a spammer's solo+leave pairs were answered with. */
typedef struct spam_result {
    int started, limited;
} spam_result;

/* Sends pairs of solo+leave at once. */
static void spam_send(client *c, int pairs) {
    static const char pair[] = "{\"type\":\"solo\"}\n{\"type\":\"leave\"}\n";
    size_t n = (size_t)pairs * (sizeof pair - 1);
    char *lines = malloc(n);
    assert_non_null(lines);
    for (int i = 0; i < pairs; i++)
        memcpy(lines + (size_t)i * (sizeof pair - 1), pair, sizeof pair - 1);
    client_send_raw(c, lines, n, false);
    free(lines);
}

/* Reads every answer to spam_send up to the last pair's `left`: each solo is
 * a `start` or an error rate_limited that says when to come back. */
static spam_result spam_read(client *c, int pairs) {
    spam_result r = {0};
    for (int left = 0; left < pairs;) {
        json_t *o = client_next(c, harness_ms(WAIT));
        if (!o) fail_msg("the spammer was closed after %d pairs", left);
        const char *type = jstr(o, "type");
        if (!strcmp(type, "start")) {
            r.started++;
        } else if (!strcmp(type, "error")) {
            assert_string_equal(jstr(o, "code"), "rate_limited");
            if (!strstr(jstr(o, "message"), "you may start another in "))
                fail_msg("rate_limited does not say when: %s", jstr(o, "message"));
            r.limited++;
        } else if (!strcmp(type, "left")) {
            left++;
        } else if (strcmp(type, "welcome") && strcmp(type, "end")) {
            fail_msg("the spammer got a %s", type);
        }
    }
    assert_int_equal(r.started + r.limited, pairs);
    return r;
}

/* The history a client gets (limit 100). */
static json_t *history_of(client *c) {
    client_send(c, "{\"type\":\"history\",\"limit\":100}");
    return jarr(client_expect(c, "history", WAIT), "games");
}

/* A victim on 127.0.0.2 races while one connection from 127.0.0.1 sends a
 * thousand solo+leave pairs, then four more connections of that address try
 * again: the spammer starts its burst and no more than the refill, the
 * victim's race (boards changed) is in history and replay, none of the
 * spammer's unplayed games is, also after a restart, and the victim can still
 * start games. */
static void test_spammer_limited_victim_keeps_history(void **state) {
    char limit[16];
    snprintf(limit, sizeof limit, "%d", GAMES_PER_MIN);
    const char *const flags[] = {"--journal", journal_path(), "--max-games-per-min",
                                 limit, NULL};
    th_server *s = server_start(flags);

    client *v[2];
    v[0] = client_connect_from(s, "127.0.0.2");
    client_hello(v[0], "vic0");
    v[1] = client_connect_from(s, "127.0.0.2");
    client_hello(v[1], "vic1");
    client_send(v[0], "{\"type\":\"create\",\"players\":2}");
    char room[16];
    snprintf(room, sizeof room, "%s", jstr(client_expect(v[0], "room", WAIT), "room"));
    client_send(v[1], "{\"type\":\"join\",\"room\":\"%s\"}", room);
    for (int i = 0; i < 2; i++)
        client_expect_skip(v[i], "start", "room", WAIT);

    enum { PAIRS = 1000, MORE = 4, MORE_PAIRS = 50 };
    int64_t began = harness_now_ms();
    client *spammer = client_connect(s);
    spam_send(spammer, PAIRS);
    /* The race is played while the spam is answered. */
    for (int k = 0; k < 3; k++) {
        client_move_any(v[0]);
        client_move_any(v[1]);
    }
    spam_result first = spam_read(spammer, PAIRS);
    client_send(v[0], "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(v[1], "end", "state player", WAIT);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    client_close(spammer);

    /* Other connections of the same address share its budget, which a
     * closed connection does not reset. */
    spam_result more = {0};
    for (int i = 0; i < MORE; i++) {
        client *c = client_connect(s);
        spam_send(c, MORE_PAIRS);
        spam_result r = spam_read(c, MORE_PAIRS);
        more.started += r.started;
        more.limited += r.limited;
    }
    double seconds = (double)(harness_now_ms() - began) / 1000.0;
    print_message("spam: %d of %d games started, then %d of %d from %d more connections, "
                  "in %.1f s\n",
                  first.started, PAIRS, more.started, MORE * MORE_PAIRS, MORE, seconds);
    /* The burst, and a game back every 0.5 s after it. */
    int refill = (int)(seconds * GAMES_PER_MIN / 60.0) + 2;
    assert_true(first.started >= GAMES_PER_MIN);
    assert_true(first.started + more.started <= GAMES_PER_MIN + refill);
    assert_true(more.limited >= MORE * MORE_PAIRS - refill);

    /* The victim's race is listed, alone: the spam games changed no board. */
    json_t *games = history_of(v[1]);
    assert_int_equal(json_array_size(games), 1);
    json_t *race = json_array_get(games, 0);
    assert_string_equal(jstr(race, "room"), room);
    json_int_t game = jint(race, "game");
    client_send(v[1], "{\"type\":\"replay\",\"game\":%lld}", (long long)game);
    json_t *replay = client_expect(v[1], "replay", WAIT);
    const char *key;
    json_t *mv;
    json_object_foreach(jobj(replay, "moves"), key, mv) {
        assert_true(strlen(json_string_value(mv)) >= 3);
    }
    /* A spam game is in the journal, but replay does not know it. */
    char *data = harness_read_file(journal_path(), NULL);
    const char *unplayed = strstr(data, "\":\"\"}}\n");
    assert_non_null(unplayed);
    while (unplayed > data && unplayed[-1] != '\n')
        unplayed--;
    long long spam_game = 0;
    assert_int_equal(sscanf(unplayed, "{\"j\":\"game\",\"game\":%lld", &spam_game), 1);
    free(data);
    client_send(v[1], "{\"type\":\"replay\",\"game\":%lld}", spam_game);
    client_expect_error(v[1], "game_not_found", WAIT);

    /* The victim's address can still start games. */
    client_send(v[1], "{\"type\":\"solo\"}");
    client_expect(v[1], "start", WAIT);
    client_send(v[1], "{\"type\":\"leave\"}");
    client_expect_skip(v[1], "left", "end", WAIT);

    /* After a restart history reads the journal: the same one game. */
    server_stop(s);
    s = server_start(flags);
    client *reader = client_connect_from(s, "127.0.0.2");
    client_hello(reader, "reader");
    games = history_of(reader);
    assert_int_equal(json_array_size(games), 1);
    assert_int_equal(jint(json_array_get(games, 0), "game"), game);
    data = harness_read_file(journal_path(), NULL);
    int records = 0;
    for (const char *p = data; (p = strstr(p, "{\"j\":\"game\"")); p++)
        records++;
    free(data);
    assert_true(records >= GAMES_PER_MIN); /* the spam games are kept in the file */
}

/* A solo game with a move is listed; one without is not (it is kept in the
 * journal), also once the server has read its journal back. */
static void test_unplayed_game_not_listed(void **state) {
    const char *const flags[] = {"--journal", journal_path(), NULL};
    th_server *s = server_start(flags);
    client *a = client_named(s, "ann");
    client_send(a, "{\"type\":\"solo\",\"size\":3,\"seed\":1}");
    client_expect(a, "start", WAIT);
    client_move_any(a);
    client_send(a, "{\"type\":\"leave\"}");
    client_expect(a, "end", WAIT);
    client_expect(a, "left", WAIT);
    client_send(a, "{\"type\":\"solo\",\"size\":3,\"seed\":2}");
    client_expect(a, "start", WAIT);
    client_send(a, "{\"type\":\"leave\"}");
    client_expect(a, "end", WAIT);
    client_expect(a, "left", WAIT);
    for (int round = 0; round < 2; round++) {
        json_t *games = history_of(a);
        assert_int_equal(json_array_size(games), 1);
        assert_int_equal(jint(json_array_get(games, 0), "seed"), 1);
        if (round == 0) {
            server_stop(s);
            s = server_start(flags);
            a = client_named(s, "reader");
        }
    }
    char *data = harness_read_file(journal_path(), NULL);
    assert_non_null(strstr(data, "\"seed\":2,"));
    free(data);
}

/* A person on netcat is told in words when it may start another game; the
 * refusal changes nothing else. */
static void test_text_mode_told_when(void **state) {
    th_server *s = SERVER("--max-games-per-min", "2");
    tt_client c;
    tt_connect_from(&c, s->port, "127.0.0.4");
    if (tt_wait_str(&c, 0, "\r\n> ", harness_ms(TT_WAIT)) < 0) fail_msg("no lobby");
    for (int i = 0; i < 2; i++) {
        size_t mark = c.len;
        tt_sends(&c, "solo\r\n");
        if (tt_wait_str(&c, mark, "score", harness_ms(TT_WAIT)) < 0) fail_msg("no game");
        mark = c.len;
        tt_sends(&c, "leave\r\n");
        if (tt_wait_str(&c, mark, "You left", harness_ms(TT_WAIT)) < 0)
            fail_msg("no leave");
    }
    size_t mark = c.len;
    tt_sends(&c, "quick\r\n");
    if (tt_wait_str(&c, mark, "you may start another in ", harness_ms(TT_WAIT)) < 0) {
        tt_screen_text(c.buf, c.len, mark, screen_text, sizeof screen_text);
        fail_msg("no word of the limit:\n%s", screen_text);
    }
    tt_close(&c);
}

/* ------------------------------------------------------ resume-code lockout --- */

/* The attacker of issue 16 on 127.0.0.1, in a thread of its own (plain
 * sockets, no test harness): 25 wrong codes on 5 connections, then 4 text
 * connections that keep sending `resume AAAAAAAA`, each opened again when
 * the server closes it. */
typedef struct attacker {
    int port;
    atomic_bool stop;
    atomic_long attempts, connections;
} attacker;

static int attack_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads what is there without waiting; false once the server has closed. */
static bool attack_drain(int fd, int wait_ms) {
    char buf[4096];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, wait_ms) > 0) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
        wait_ms = 0;
    }
    return true;
}

static void *attack(void *arg) {
    attacker *a = arg;
    static const char wrong[] = "resume 2345-6789\r\n", guess[] = "resume AAAAAAAA\r\n";
    for (int k = 0; k < 5 && !a->stop; k++) {
        int fd = attack_connect(a->port);
        if (fd < 0) continue;
        a->connections++;
        for (int i = 0; i < 5; i++)
            if (send(fd, wrong, sizeof wrong - 1, MSG_NOSIGNAL) > 0) a->attempts++;
        /* until the server closes it, after the fifth */
        for (int t = 0; t < 100 && attack_drain(fd, 20); t++)
            ;
        close(fd);
    }
    int fds[4] = {-1, -1, -1, -1};
    while (!a->stop) {
        for (int i = 0; i < 4; i++) {
            if (fds[i] < 0 && (fds[i] = attack_connect(a->port)) >= 0) a->connections++;
            if (fds[i] < 0) continue;
            if (send(fds[i], guess, sizeof guess - 1, MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
                a->attempts++;
            if (!attack_drain(fds[i], 0)) {
                close(fds[i]);
                fds[i] = -1;
            }
        }
        poll(NULL, 0, 2);
    }
    for (int i = 0; i < 4; i++)
        if (fds[i] >= 0) close(fds[i]);
    return NULL;
}

/* The resume code on a text race screen (plain text), into code. */
static void code_on_screen(const char *screen, char code[16]) {
    const char *at = strstr(screen, "type:  resume ");
    if (!at) fail_msg("no resume code on the race screen:\n%s", screen);
    at += 14;
    size_t n = 0;
    while (n < 15 && ((at[n] >= 'A' && at[n] <= 'Z') || (at[n] >= '0' && at[n] <= '9')))
        n++;
    if (n != 8) fail_msg("a resume code of %zu characters:\n%s", n, screen);
    memcpy(code, at, n);
    code[n] = '\0';
}

static char screen[SCREEN];

static void wait_screen(tt_client *c, size_t from, const char *needle) {
    if (!tt_wait_screen(c, from, tt_has, (void *)needle, harness_ms(TT_WAIT), screen,
                        SCREEN))
        fail_msg("no screen with \"%s\" came; the last one:\n%s", needle, screen);
}

/* A netcat racer on 127.0.0.2 drops and comes back with its code, again and
 * again, while the attacker on 127.0.0.1 guesses codes as fast as it can:
 * the racer is never refused and gets its seat back every time. */
static void test_resume_lockout(void **state) {
    th_server *s = SERVER("--grace", "60");
    client *jo = client_connect_from(s, "127.0.0.3");
    client_hello(jo, "jo");
    client_send(jo, "{\"type\":\"create\",\"players\":2}");
    char room[16];
    snprintf(room, sizeof room, "%s", jstr(client_expect(jo, "room", WAIT), "room"));

    tt_client tom;
    tt_connect_from(&tom, s->port, "127.0.0.2");
    if (tt_wait_str(&tom, 0, "\r\n> ", harness_ms(TT_WAIT)) < 0) fail_msg("no lobby");
    size_t mark = tom.len;
    char line[64];
    snprintf(line, sizeof line, "name tom\r\njoin %s\r\n", room);
    tt_sends(&tom, line);
    wait_screen(&tom, mark, "type:  resume ");
    char code[16];
    code_on_screen(screen, code);
    client_expect_skip(jo, "start", "room player", WAIT);

    attacker a = {.port = s->port};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, attack, &a), 0);
    /* The attack is under way: its first 25 attempts are made. */
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (a.attempts < 30 && harness_remaining(deadline))
        poll(NULL, 0, 10);

    enum { ROUNDS = 10 };
    for (int round = 0; round < ROUNDS; round++) {
        tt_close(&tom);
        json_t *p = client_expect_skip(jo, "player", "state", WAIT);
        assert_false(jbool(p, "connected"));
        tt_connect_from(&tom, s->port, "127.0.0.2");
        if (tt_wait_str(&tom, 0, "\r\n> ", harness_ms(TT_WAIT)) < 0) fail_msg("no lobby");
        mark = tom.len;
        snprintf(line, sizeof line, "resume %s\r\n", code);
        tt_sends(&tom, line);
        wait_screen(&tom, mark, "Welcome back, tom");
        p = client_expect_skip(jo, "player", "state", WAIT);
        assert_true(jbool(p, "connected"));
    }
    a.stop = true;
    pthread_join(thread, NULL);
    print_message("the attacker made %ld code attempts on %ld connections; the victim "
                  "resumed %d of %d times\n",
                  (long)a.attempts, (long)a.connections, ROUNDS, ROUNDS);
    assert_true(a.attempts > 100); /* it did attack meanwhile */
    tt_close(&tom);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spammer_limited_victim_keeps_history,
                                        setup_dir, harness_teardown),
        cmocka_unit_test_setup_teardown(test_unplayed_game_not_listed, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_teardown(test_text_mode_told_when, harness_teardown),
        cmocka_unit_test_teardown(test_resume_lockout, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
