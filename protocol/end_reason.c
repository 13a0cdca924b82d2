/* end_reason.c - why a game ended: the one table of `end`'s reason names and their
 * values. */
#include "end_reason.h"

#include <string.h>

/* Indexed by proto_end_reason. */
static const char *const reason_names[PROTO_END_REASONS] = {
    [PROTO_END_TARGET] = "target",
    [PROTO_END_ALL_OVER] = "all_over",
    [PROTO_END_TIME] = "time",
    [PROTO_END_FORFEIT] = "forfeit",
};

const char *proto_end_reason_name(proto_end_reason reason) {
    return (unsigned)reason < PROTO_END_REASONS ? reason_names[reason] : "unknown";
}

bool proto_end_reason_parse(const char *name, proto_end_reason *out) {
    for (unsigned k = 0; name && k < PROTO_END_REASONS; k++)
        if (!strcmp(name, reason_names[k])) {
            *out = (proto_end_reason)k;
            return true;
        }
    return false;
}
