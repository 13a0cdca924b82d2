/* test_command.c - text-mode lines into commands, moves and helpful errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "command.h"

static proto_command cmd;

static proto_cmd_type parse(const char *line) {
    return proto_command_parse(line, strlen(line), &cmd);
}

/* The moves of a line as a string of U/D/L/R, for easy comparison. */
static const char *moves_of(const char *line) {
    static char out[PROTO_CMD_MOVES_MAX + 1];
    assert_int_equal(parse(line), PROTO_CMD_MOVES);
    assert_true(cmd.n_moves > 0 && cmd.n_moves <= PROTO_CMD_MOVES_MAX);
    for (size_t i = 0; i < cmd.n_moves; i++) {
        switch (cmd.moves[i]) {
        case ENG_UP:
            out[i] = 'U';
            break;
        case ENG_DOWN:
            out[i] = 'D';
            break;
        case ENG_LEFT:
            out[i] = 'L';
            break;
        case ENG_RIGHT:
            out[i] = 'R';
            break;
        default:
            fail_msg("bad move %d", cmd.moves[i]);
        }
    }
    out[cmd.n_moves] = '\0';
    return out;
}

static void assert_error(const char *line, const char *message) {
    assert_int_equal(parse(line), PROTO_CMD_ERROR);
    assert_string_equal(cmd.error, message);
}

static void test_bare_commands(void **state) {
    assert_int_equal(parse("help"), PROTO_CMD_HELP);
    assert_int_equal(parse("rooms"), PROTO_CMD_ROOMS);
    assert_int_equal(parse("leave"), PROTO_CMD_LEAVE);
    assert_int_equal(parse("quit"), PROTO_CMD_QUIT);
    assert_int_equal(parse("exit"), PROTO_CMD_QUIT);
    assert_int_equal(parse("rematch"), PROTO_CMD_REMATCH);
    assert_int_equal(parse("help solo"), PROTO_CMD_HELP);
    assert_error("leave now", "leave takes nothing after it");
    assert_error("quit 1", "quit takes nothing after it");
}

static void test_case_and_whitespace(void **state) {
    assert_int_equal(parse("  HELP \t"), PROTO_CMD_HELP);
    assert_int_equal(parse("Solo   5 "), PROTO_CMD_SOLO);
    assert_int_equal(cmd.number, 5);
    assert_int_equal(parse("\tJoin\tab12 "), PROTO_CMD_JOIN);
    assert_string_equal(cmd.room, "AB12");
    assert_int_equal(parse("QuIt"), PROTO_CMD_QUIT);
}

static void test_empty(void **state) {
    assert_int_equal(parse(""), PROTO_CMD_EMPTY);
    assert_int_equal(parse("  \t "), PROTO_CMD_EMPTY);
}

static void test_name(void **state) {
    assert_int_equal(parse("name Alice_2-b"), PROTO_CMD_NAME);
    assert_string_equal(cmd.name, "Alice_2-b"); /* case kept */
    assert_int_equal(parse("NAME abcdefghijklmnop"), PROTO_CMD_NAME);
    assert_string_equal(cmd.name, "abcdefghijklmnop");
    const char *msg = "name takes one name: 1 to 16 letters A-Z, digits, _ or -";
    assert_error("name", msg);
    assert_error("name abcdefghijklmnopq", msg);
    assert_error("name bad!", msg);
    assert_error("name two words", msg);
    assert_int_equal(proto_command_parse("name bo\0b", 9, &cmd), PROTO_CMD_ERROR);
    assert_string_equal(cmd.name, "");
}

static void test_solo(void **state) {
    assert_int_equal(parse("solo"), PROTO_CMD_SOLO);
    assert_int_equal(cmd.number, 0);
    assert_int_equal(parse("solo 3"), PROTO_CMD_SOLO);
    assert_int_equal(cmd.number, 3);
    assert_int_equal(parse("solo 8"), PROTO_CMD_SOLO);
    assert_int_equal(cmd.number, 8);
    const char *msg = "solo takes a size from 3 to 8 (solo 4 is the usual 4x4)";
    assert_error("solo 2", msg);
    assert_error("solo 9", msg);
    assert_error("solo 4x4", msg);
    assert_error("solo -4", msg);
    assert_error("solo 99999999999999999999", msg);
    assert_error("solo 4 4", msg);
}

static void test_create_and_quick(void **state) {
    assert_int_equal(parse("create"), PROTO_CMD_CREATE);
    assert_int_equal(cmd.number, 0);
    assert_int_equal(parse("create 8"), PROTO_CMD_CREATE);
    assert_int_equal(cmd.number, 8);
    assert_int_equal(cmd.size, 0);
    assert_int_equal(cmd.target, 0);
    /* Issue 29: the size and the target too, after the players. */
    assert_int_equal(parse("create 3 5"), PROTO_CMD_CREATE);
    assert_int_equal(cmd.number, 3);
    assert_int_equal(cmd.size, 5);
    assert_int_equal(cmd.target, 0);
    assert_int_equal(parse("CREATE 2 4 512"), PROTO_CMD_CREATE);
    assert_int_equal(cmd.size, 4);
    assert_int_equal(cmd.target, 512);
    assert_int_equal(parse("create 2 8 1048576"), PROTO_CMD_CREATE);
    assert_int_equal(cmd.target, 1048576);
    static const char cmsg[] = "create takes players (2-8), then a size (3-8), then a "
                               "target (a power of two, 8 or more): create 2 4 512";
    assert_error("create 1", cmsg);
    assert_error("create 2 9", cmsg);
    assert_error("create 2 4 500", cmsg);
    assert_error("create 2 4 4", cmsg);
    assert_error("create 2 4 2097152", cmsg);
    assert_error("create 2 4 512 x", cmsg);
    assert_int_equal(parse("quick 2"), PROTO_CMD_QUICK);
    assert_int_equal(cmd.number, 2);
    assert_int_equal(parse("quick"), PROTO_CMD_QUICK);
    assert_int_equal(cmd.number, 0);
    assert_error("quick 9", "quick takes a number of players from 2 to 8");
    assert_error("quick two", "quick takes a number of players from 2 to 8");
}

/* What a stuck telnet racer's move keys may add to the command line. */
static void test_command_begins(void **state) {
    (void)state;
    assert_true(proto_command_begins("", 0));
    assert_true(proto_command_begins("l", 1));
    assert_true(proto_command_begins("LeAv", 4));
    assert_true(proto_command_begins("leave", 5));
    assert_true(proto_command_begins("join kw", 7));
    assert_false(proto_command_begins("d", 1)); /* not daily's: a move */
    assert_false(proto_command_begins("sa", 2));
    assert_false(proto_command_begins("leaves", 6));
}

static void test_join_and_watch(void **state) {
    assert_int_equal(parse("join k7q2"), PROTO_CMD_JOIN);
    assert_string_equal(cmd.room, "K7Q2");
    assert_int_equal(parse("watch abcdefgh"), PROTO_CMD_WATCH);
    assert_string_equal(cmd.room, "ABCDEFGH");
    const char *jmsg = "join takes a room code: 4 to 8 letters and digits";
    assert_error("join", jmsg);
    assert_error("join abc", jmsg);
    assert_error("join abcdefghi", jmsg);
    assert_error("join ab-cd", jmsg);
    assert_error("join abcd efgh", jmsg);
    assert_error("watch", "watch takes a room code: 4 to 8 letters and digits");
}

static void test_color(void **state) {
    assert_int_equal(parse("color on"), PROTO_CMD_COLOR);
    assert_true(cmd.on);
    assert_int_equal(parse("colour OFF"), PROTO_CMD_COLOR);
    assert_false(cmd.on);
    assert_error("color", "color takes on or off");
    assert_error("color blue", "color takes on or off");
}

static void test_unknown(void **state) {
    assert_error("foo", "unknown command 'foo' - type help");
    assert_error("foo bar", "unknown command 'foo' - type help");
    assert_error("wasdx", "unknown command 'wasdx' - type help");
    /* Control bytes are not echoed back raw; long words are cut. */
    assert_error("f\x01o", "unknown command 'f?o' - type help");
    assert_error("abcdefghijklmnopqrstuvwxyz",
                 "unknown command 'abcdefghijklmnop...' - type help");
}

static void test_move_letters(void **state) {
    assert_string_equal(moves_of("wasd"), "ULDR");
    assert_string_equal(moves_of("hjkl"), "LDUR");
    assert_string_equal(moves_of("WASD"), "ULDR");
    assert_string_equal(moves_of("HJKL"), "LDUR");
    assert_string_equal(moves_of("d"), "R");
    assert_string_equal(moves_of("dash"), "RLDL"); /* every char a move key: moves */
    assert_string_equal(moves_of("w a  s\td"), "ULDR");
}

static void test_move_words(void **state) {
    assert_string_equal(moves_of("up"), "U");
    assert_string_equal(moves_of("down"), "D");
    assert_string_equal(moves_of("LEFT"), "L");
    assert_string_equal(moves_of(" Right "), "R");
    assert_string_equal(moves_of("up up left w"), "UULU");
    /* A move word needs a boundary before it: "dup" is no "d" + "up". */
    assert_int_equal(parse("dup"), PROTO_CMD_ERROR);
    assert_int_equal(parse("upup"), PROTO_CMD_ERROR);
}

static void test_arrows_in_line(void **state) {
    assert_string_equal(moves_of("\x1b[A"), "U");
    assert_string_equal(moves_of("\x1b[A\x1b[B\x1b[C\x1b[D"), "UDRL");
    assert_string_equal(moves_of("\x1bOA\x1bOB\x1bOC\x1bOD"), "UDRL");
    assert_string_equal(moves_of("w\x1b[Dk\x1bOCup"), "ULURU");
    /* Other escape sequences are not moves. */
    assert_int_equal(parse("\x1b[3~"), PROTO_CMD_ERROR);
    assert_int_equal(parse("w\x1b"), PROTO_CMD_ERROR);
    assert_int_equal(parse("\x1b[E"), PROTO_CMD_ERROR);
}

static void test_move_line_bounded(void **state) {
    char line[PROTO_CMD_MOVES_MAX + 2];
    memset(line, 'd', sizeof line);
    assert_int_equal(proto_command_parse(line, PROTO_CMD_MOVES_MAX, &cmd),
                     PROTO_CMD_MOVES);
    assert_int_equal(cmd.n_moves, PROTO_CMD_MOVES_MAX);
    assert_int_equal(proto_command_parse(line, PROTO_CMD_MOVES_MAX + 1, &cmd),
                     PROTO_CMD_ERROR);
    assert_string_equal(
        cmd.error, "too many moves in one line (257): at most 256, the line was ignored");
}

static void test_help_text(void **state) {
    const char *h = proto_command_help();
    assert_non_null(strstr(h, "solo [SIZE]"));
    assert_non_null(strstr(h, "color on|off"));
    /* CRLF only: no bare '\n'. */
    for (const char *p = h; *p; p++)
        if (*p == '\n') assert_true(p > h && p[-1] == '\r');
    assert_int_equal(h[strlen(h) - 1], '\n');
}

static void test_help_fits_50_columns_and_lists_everything(void **state) {
    (void)state;
    const char *h = proto_command_help();
    static const char *const must[] = {
        "leave",      "rematch", "resume CODE", "type : first",   "quick [N]",
        "watch CODE", "quit",    "bot [LEVEL]", "create [N S T]", NULL};
    for (const char *const *m = must; *m; m++)
        if (!strstr(h, *m)) fail_msg("the help lacks \"%s\"", *m);
    int lines = 0;
    for (const char *p = h; *p;) {
        const char *end = strstr(p, "\r\n");
        assert_non_null(end);
        if (end - p > 50)
            fail_msg("a help line of %d columns: %.*s", (int)(end - p), (int)(end - p),
                     p);
        lines++;
        p = end + 2;
    }
    /* With a title, a status and a prompt it fits 24 rows. */
    assert_true(lines <= 20);
    for (int mode = 0; mode < 2; mode++) {
        const char *one = proto_command_help_in_game(mode);
        assert_null(strchr(one, '\n'));
        assert_non_null(strstr(one, "leave"));
        assert_true(strlen(one) <= 2 * 80);
    }
    assert_non_null(strstr(proto_command_help_in_game(true), "type : first"));
}

/* daily [SIZE] and top daily [SIZE]: a size 3 to 8, or none for the default. */
static void test_daily(void **state) {
    (void)state;
    assert_int_equal(parse("daily"), PROTO_CMD_DAILY);
    assert_int_equal(cmd.number, 0);
    assert_int_equal(parse("DAILY 6"), PROTO_CMD_DAILY);
    assert_int_equal(cmd.number, 6);
    assert_int_equal(parse("daily 9"), PROTO_CMD_ERROR);
    assert_int_equal(parse("daily 4 4"), PROTO_CMD_ERROR);
    assert_int_equal(parse("top daily"), PROTO_CMD_TOP_DAILY);
    assert_int_equal(cmd.number, 0);
    assert_int_equal(parse("top Daily 5"), PROTO_CMD_TOP_DAILY);
    assert_int_equal(cmd.number, 5);
    assert_int_equal(parse("top daily 2"), PROTO_CMD_ERROR);
    assert_int_equal(parse("top weekly"), PROTO_CMD_ERROR);
    assert_non_null(strstr(proto_command_help(), "daily [SIZE]"));
    assert_non_null(strstr(proto_command_help(), "top [daily [S]]"));
}

static void test_history_and_replay(void **state) {
    (void)state;
    assert_int_equal(parse("history"), PROTO_CMD_HISTORY);
    assert_int_equal(parse("HISTORY"), PROTO_CMD_HISTORY);
    assert_int_equal(parse("history 5"), PROTO_CMD_ERROR);
    assert_int_equal(parse("replay 17"), PROTO_CMD_REPLAY);
    assert_int_equal(cmd.game, 17);
    assert_int_equal(parse("replay #123456789012"), PROTO_CMD_REPLAY);
    assert_int_equal(cmd.game, 123456789012ull);
    assert_int_equal(parse("replay"), PROTO_CMD_ERROR);
    assert_int_equal(parse("replay x1"), PROTO_CMD_ERROR);
    assert_int_equal(parse("replay 1 2"), PROTO_CMD_ERROR);
    assert_int_equal(parse("replay 1234567890123456"), PROTO_CMD_ERROR);
    assert_non_null(strstr(proto_command_help(), "replay ID"));
}

static void test_accounts(void **state) {
    (void)state;
    assert_int_equal(parse("register"), PROTO_CMD_REGISTER);
    assert_int_equal(parse("register me"), PROTO_CMD_ERROR);
    assert_int_equal(parse("LOGOUT"), PROTO_CMD_LOGOUT);
    assert_int_equal(parse("top"), PROTO_CMD_TOP);
    assert_int_equal(parse("profile"), PROTO_CMD_PROFILE);
    assert_string_equal(cmd.name, "");
    assert_int_equal(parse("profile Ada_2"), PROTO_CMD_PROFILE);
    assert_string_equal(cmd.name, "Ada_2");
    assert_int_equal(parse("profile a b"), PROTO_CMD_ERROR);
    assert_int_equal(parse("profile no!"), PROTO_CMD_ERROR);
    assert_int_equal(parse("login Ada 0123456789ABCDEF0123456789abcdef"),
                     PROTO_CMD_LOGIN);
    assert_string_equal(cmd.name, "Ada");
    assert_string_equal(cmd.key, "0123456789abcdef0123456789abcdef");
    /* Not a key: too short, not hex, missing; nothing of it is kept. */
    assert_int_equal(parse("login Ada 0123"), PROTO_CMD_ERROR);
    assert_int_equal(parse("login Ada 0123456789abcdef0123456789abcdeg"),
                     PROTO_CMD_ERROR);
    assert_string_equal(cmd.key, "");
    assert_int_equal(parse("login Ada"), PROTO_CMD_ERROR);
    assert_non_null(strstr(cmd.error, "login NAME KEY"));
    const char *h = proto_command_help();
    static const char *const must[] = {"register", "login NAME KEY", "logout",
                                       "top",      "profile [NAME]", NULL};
    for (const char *const *m = must; *m; m++)
        if (!strstr(h, *m)) fail_msg("the help lacks \"%s\"", *m);
}

static void test_resume(void **state) {
    (void)state;
    assert_int_equal(parse("resume K7M2P9XQ"), PROTO_CMD_RESUME);
    assert_string_equal(cmd.code, "K7M2P9XQ");
    assert_string_equal(cmd.token, "");
    /* Lower case, a dash or a space in the middle, and the look-alikes. */
    assert_int_equal(parse("RESUME k7m2-p9xq"), PROTO_CMD_RESUME);
    assert_string_equal(cmd.code, "K7M2P9XQ");
    assert_int_equal(parse("resume  oilo 2345 "), PROTO_CMD_RESUME);
    assert_string_equal(cmd.code, "01102345");
    /* A JSON token works too. */
    assert_int_equal(parse("resume 0123456789ABCDEF0123456789abcdef"), PROTO_CMD_RESUME);
    assert_string_equal(cmd.token, "0123456789abcdef0123456789abcdef");
    assert_string_equal(cmd.code, "");
    static const char *const bad[] = {"resume",           "resume K7M2P9X",
                                      "resume K7M2P9XQZ", "resume K7M2P9XU",
                                      "resume K7M2!9XQ",  "resume 0123456789abcdefg"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (parse(bad[i]) != PROTO_CMD_ERROR) fail_msg("accepted: %s", bad[i]);
        assert_non_null(strstr(cmd.error, "resume takes"));
    }
    char out[PROTO_RESUME_CODE_LEN + 1];
    assert_int_equal(proto_resume_code_parse("abcd\0efg", 8, out), -1);
}

/* arenas, arena CODE, arena new MINUTES [PLAYERS] (issue 28). */
static void test_arenas(void **state) {
    (void)state;
    assert_int_equal(parse("arenas"), PROTO_CMD_ARENAS);
    assert_int_equal(parse("Arena ab12cd"), PROTO_CMD_ARENA);
    assert_string_equal(cmd.room, "AB12CD");
    assert_int_equal(parse("arena new 30"), PROTO_CMD_ARENA_NEW);
    assert_int_equal(cmd.number, 30);
    assert_int_equal(cmd.size, 0);
    assert_int_equal(parse("arena NEW 240 8"), PROTO_CMD_ARENA_NEW);
    assert_int_equal(cmd.number, 240);
    assert_int_equal(cmd.size, 8);
    static const char *const bad[] = {
        "arena",           "arena new",      "arena new 4",
        "arena new 241",   "arena new 30 1", "arena new 30 9",
        "arena new 5 2 1", "arena a-b",      "arena ABCDEFGHJ"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parse(bad[i]) != PROTO_CMD_ERROR) fail_msg("%s was taken", bad[i]);
    assert_non_null(strstr(proto_command_help(), "arena new MIN [N]"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bare_commands),
        cmocka_unit_test(test_case_and_whitespace),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_solo),
        cmocka_unit_test(test_create_and_quick),
        cmocka_unit_test(test_command_begins),
        cmocka_unit_test(test_join_and_watch),
        cmocka_unit_test(test_color),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_move_letters),
        cmocka_unit_test(test_move_words),
        cmocka_unit_test(test_arrows_in_line),
        cmocka_unit_test(test_move_line_bounded),
        cmocka_unit_test(test_help_text),
        cmocka_unit_test(test_help_fits_50_columns_and_lists_everything),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_accounts),
        cmocka_unit_test(test_daily),
        cmocka_unit_test(test_history_and_replay),
        cmocka_unit_test(test_arenas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
