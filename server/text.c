/* text.c - text mode for humans on telnet or netcat (placeholder until issue 5 lands). */
#include "text.h"

#include <string.h>

static void say(conn *c, const char *s) {
    conn_write(c, s, strlen(s));
}

void text_begin(conn *c) {
    say(c, "race2048: text mode is not here yet; JSON clients send {\"type\":...} "
           "lines.\r\n");
}

void text_input(conn *c, const char *data, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (data[i] == '{') { /* a JSON client that spoke late */
            conn_become_json(c, data + i, n - i);
            return;
        }
    }
}

void text_deliver(conn *c, const srv_msg *m) {}
void text_say_bye(conn *c) {
    say(c, "The server is stopping. Goodbye!\r\n");
}
void text_say_idle(conn *c) {
    say(c, "Closing this idle connection. Goodbye!\r\n");
}
void text_free(conn *c) {}
