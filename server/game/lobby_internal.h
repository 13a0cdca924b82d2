/* lobby_internal.h - what lobby.c and requests.c share, for them only. */
#ifndef RACE2048_LOBBY_INTERNAL_H
#define RACE2048_LOBBY_INTERNAL_H

#include "lobby.h"

/* An account's rating object, as `welcome` and `profile` show it. */
proto_rating lobby_rating_of(const acct_account *a);
/* `quick` for p (in nothing: the request has refused a race and left the
 * rest): queues p with settings, says `queued`, and starts the race once
 * enough alive players wait (or arms --quick-bots' wait). */
void lobby_quick(srv_player *p, const proto_settings *settings);

#endif
