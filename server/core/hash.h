/* hash.h - uthash set up for the server: running out of memory in a table is an
 * error the caller handles, never an exit. */
#ifndef RACE2048_HASH_H
#define RACE2048_HASH_H

/* Every HASH_ADD must be followed by a check of a local `int hash_oom = 0;`
 * declared before it: on a failed allocation uthash leaves the table as it
 * was, does not add the item and sets it. */
#define HASH_NONFATAL_OOM        1
#define uthash_nonfatal_oom(obj) (hash_oom = 1)

#include <uthash.h>

#endif
