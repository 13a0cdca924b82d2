/* end_reason.h - why a game ended: the one table of `end`'s reason names and their
 * values. */
#ifndef RACE2048_END_REASON_H
#define RACE2048_END_REASON_H

#include <stdbool.h>

/* The values are the journal's and /metrics' order: do not renumber. */
typedef enum proto_end_reason {
    PROTO_END_TARGET,
    PROTO_END_ALL_OVER,
    PROTO_END_TIME,
    PROTO_END_FORFEIT,
} proto_end_reason;

/* How many reasons there are (arrays indexed by proto_end_reason). */
#define PROTO_END_REASONS 4

/* The wire name of a reason ("target", "all_over", "time", "forfeit"), as `end`,
 * the journal and /metrics spell it; "unknown" for a value outside the enum. */
const char *proto_end_reason_name(proto_end_reason reason);

/* The reason named name (exactly, case included): true with *out set, false with
 * *out unchanged for anything else, NULL included. */
bool proto_end_reason_parse(const char *name, proto_end_reason *out);

#endif
