#!/usr/bin/env bash
# docker/verify-cluster.sh - CI check of docker/compose.cluster.yaml: a race through HAProxy survives `docker kill` of its node.
#
# Runs after docker/verify-restart.sh (see .ci/run), on the dockerd that the
# CI machine's verify-docker.sh left running (VERIFY_KEEP_DAEMON=1), with
# Debian's docker-compose 1.29.
#   1. builds compose.cluster.yaml's images (race2048d:latest is usually
#      there already, from the compose check) and starts it as project
#      race2048cluster<pid>, HAProxy published on 127.0.0.1 only;
#   2. waits until every node's /metrics (read inside it with `docker exec`)
#      says race2048_cluster_nodes 3 and the balancer answers a JSON ping;
#   3. two JSON clients race through the balancer: create + join, a few
#      moves each; their boards, scores and tokens are noted, and which node
#      each landed on (a player id is its node's number times 2^40);
#   4. docker kill -s KILL of the node the creator landed on (it runs the
#      room); the balancer must answer a JSON ping at once (a connect to the
#      dead node is retried on another);
#   5. (unless --no-takeover) both players `resume` with their tokens
#      through the balancer within 15 s of the kill: the `start` snapshot
#      must show exactly the boards, scores, move counts and statuses they
#      had; each plays one more move and gets its `state`; then both
#      survivors must count race2048_cluster_nodes 2, and HAProxy must have
#      the dead node DOWN (its stats page), within 15 s;
#   6. a surviving node is cut off from NATS (`docker network disconnect`
#      from the nodes' network to NATS): its /healthz must say 503, HAProxy
#      must drain it, and 10 new connections must all go to the other live
#      node; connected again, its /healthz must say 200 again;
#   7. `down -v`: containers, networks and volumes go; so do the images this
#      run built (race2048d:latest, race2048-nats:latest, race2048-haproxy:latest
#      are kept if they were there before).
# Prints "verify-cluster: PASS" or "verify-cluster: FAIL ..." last; exits
# non-zero on failure, and cleans up in both cases. Only loopback is
# published.
#
# Usage: docker/verify-cluster.sh [options]
#   -H, --host-port PORT  loopback port HAProxy publishes the game port on
#                         (default 17010)
#   --http-port PORT      loopback port for the browsers' port (default 17011)
#   --no-takeover         skip step 5's resume (for a server without takeover)
#   --same-node           seat both players on one node (B connects again
#                         until it lands where A is; for a server without
#                         remote players: by default B is wherever the
#                         balancer puts it, usually another node)
#   --override FILE       an extra compose file layered on compose.cluster.yaml
#                         (e.g. another image or haproxy.cfg to try)
#   --stop-daemon         on exit, stop the dockerd verify-docker.sh started
#                         (its pidfile in /run/verify-docker); .ci/run passes it
#                         when that dockerd was not already running before
#   --drop-bridge         with --stop-daemon: also delete docker0 (dockerd
#                         leaves it behind; pass it when it did not exist before)
#   --cleanup-only        check nothing, only do the cleanup above (used by
#                         .ci/run when an earlier check failed)
# RACE2048_* variables set in the environment reach the nodes as with
# compose.yaml (e.g. RACE2048_LOG_LEVEL=debug).
# Needs root (the dockerd's socket), python3 (verify-docker.sh installs it),
# /usr/bin/docker and docker-compose.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

HOST_PORT=17010
HTTP_PORT=17011
TAKEOVER=1
SAME_NODE=0
OVERRIDE=""
STOP_DAEMON=0
DROP_BRIDGE=0
CLEANUP_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        -H | --host-port) HOST_PORT=$2; shift 2 ;;
        --http-port) HTTP_PORT=$2; shift 2 ;;
        --no-takeover) TAKEOVER=0; shift ;;
        --same-node) SAME_NODE=1; shift ;;
        --override) OVERRIDE=$2; shift 2 ;;
        --stop-daemon) STOP_DAEMON=1; shift ;;
        --drop-bridge) DROP_BRIDGE=1; shift ;;
        --cleanup-only) CLEANUP_ONLY=1; shift ;;
        -h | --help) sed -n '/^# Usage:/,/^# Needs root/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "verify-cluster: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
done

RUN_DIR=/run/verify-docker
export DOCKER_HOST=unix://$RUN_DIR/docker.sock
# docker-compose builds through the docker CLI, BuildKit on, as
# verify-docker.sh drives it (so the layer cache is shared); the 20.10 CLI
# in /usr/bin first.
export DOCKER_BUILDKIT=1 COMPOSE_DOCKER_CLI_BUILD=1 PATH=/usr/bin:$PATH
# What compose.cluster.yaml publishes: loopback only.
export BIND_ADDR=127.0.0.1 RACE2048_PORT=$HOST_PORT RACE2048_HTTP_PORT=$HTTP_PORT
DOCKER=/usr/bin/docker
PROJECT=race2048cluster$$
COMPOSE=(docker-compose -f docker/compose.cluster.yaml)
[ -n "$OVERRIDE" ] && COMPOSE+=(-f "$OVERRIDE")
COMPOSE+=(-p "$PROJECT")
IMAGES=(race2048d:latest race2048-nats:latest race2048-haproxy:latest)
KEEP_IMAGES=()
WORK=$(mktemp -d /tmp/verify-cluster.XXXXXX)
STARTED=0
T0=$SECONDS

log() { printf '[verify-cluster %s] %s\n' "$(date +%T)" "$*" >&2; }

stop_daemon() {
    [ "$STOP_DAEMON" = 1 ] || return 0
    local pid
    pid=$(cat "$RUN_DIR/dockerd.pid" 2>/dev/null) || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    log "stopping dockerd (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    local _
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    if [ "$DROP_BRIDGE" = 1 ] && ip link show docker0 >/dev/null 2>&1; then
        ip link delete docker0 2>/dev/null || true
    fi
}

cleanup() {
    local rc=$?
    set +e
    if [ "$CLEANUP_ONLY" = 0 ] && [ "$STARTED" = 1 ]; then
        if [ $rc != 0 ]; then
            log "logs (last 15 lines a service):"
            "${COMPOSE[@]}" logs --no-color --tail 15 >&2 2>&1
        fi
        "${COMPOSE[@]}" down -v --remove-orphans >"$WORK/down.log" 2>&1 \
            || { log "compose down failed:"; cat "$WORK/down.log" >&2; }
        local image
        for image in "${IMAGES[@]}"; do
            [[ " ${KEEP_IMAGES[*]} " == *" $image "* ]] || "$DOCKER" rmi -f "$image" >/dev/null 2>&1
        done
    fi
    stop_daemon
    rm -rf "$WORK"
    if [ "$CLEANUP_ONLY" = 0 ]; then
        if [ $rc = 0 ]; then
            echo "verify-cluster: PASS ($((SECONDS - T0)) s)" >&2
        else
            echo "verify-cluster: FAIL (rc=$rc)" >&2
        fi
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$CLEANUP_ONLY" = 1 ] && exit 0
[ "$(id -u)" = 0 ] || { log "must run as root (the dockerd socket is root's)"; exit 2; }
command -v python3 >/dev/null || { log "python3 is missing (verify-docker.sh installs it)"; exit 2; }
command -v docker-compose >/dev/null || { log "docker-compose is missing (verify-docker.sh installs it)"; exit 2; }
# No lock taken here: the dockerd that verify-docker.sh left running holds its
# lock (/run/verify-docker.lock, inherited), so no other run can start, or
# stop that dockerd, until it is stopped below.
"$DOCKER" info >/dev/null 2>&1 || { log "no dockerd on $DOCKER_HOST (run verify-docker.sh with VERIFY_KEEP_DAEMON=1 first)"; exit 1; }

for image in "${IMAGES[@]}"; do
    "$DOCKER" image inspect "$image" >/dev/null 2>&1 && KEEP_IMAGES+=("$image")
done
"${COMPOSE[@]}" config -q 2>"$WORK/config.log" || { cat "$WORK/config.log" >&2; exit 1; }
log "building compose.cluster.yaml's images (log in $WORK/build.log)"
STARTED=1
"${COMPOSE[@]}" build >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log" >&2; exit 1; }
log "up -d: project $PROJECT, balancer on 127.0.0.1:$HOST_PORT and :$HTTP_PORT"
"${COMPOSE[@]}" up -d >"$WORK/up.log" 2>&1 || { tail -30 "$WORK/up.log" >&2; exit 1; }

NODES=(node1 node2 node3)
declare -A CID
for service in nats "${NODES[@]}" haproxy; do
    CID[$service]=$("${COMPOSE[@]}" ps -q "$service")
    [ -n "${CID[$service]}" ] || { log "no container for $service"; exit 1; }
done
container() { printf '%s\n' "${CID[$1]}"; }

# http_get SERVICE PORT PATH: the service's own answer (status line,
# headers, body) to GET PATH on PORT, asked from inside its container: only
# the balancer publishes ports, and bash (in every Debian image) speaks
# enough HTTP.
http_get() {
    # shellcheck disable=SC2016 # $1 and $2 are bash -c's, not this shell's
    "$DOCKER" exec "$(container "$1")" bash -c \
        'exec 3<>/dev/tcp/127.0.0.1/$1 && printf "GET %s HTTP/1.0\r\n\r\n" "$2" >&3 && cat <&3' \
        _ "$2" "$3" 2>/dev/null
}
cluster_nodes() { http_get "$1" 8048 /metrics | awk '$1 == "race2048_cluster_nodes" {print $2}'; }
healthz_status() { http_get "$1" 8048 /healthz | awk 'NR == 1 {print $2}'; }
# balancer_sees NODE STATE: HAProxy's backend game has NODE in STATE (UP,
# DOWN, NOLB: draining), from its stats page (docker/haproxy.cfg, port 8405).
balancer_sees() {
    http_get haproxy 8405 '/stats;csv' | awk -F, -v n="$1" '$1 == "game" && $2 == n {print $18}' \
        | grep -q "^$2"
}

# wait_for SECONDS WHAT CMD...: polls CMD (quietly) until it succeeds.
wait_for() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        [ $SECONDS -lt $deadline ] || { log "$what: not within the deadline"; return 1; }
        sleep 0.5
    done
}
all_see() {
    local want=$1 node
    shift
    for node in "$@"; do [ "$(cluster_nodes "$node")" = "$want" ] || return 1; done
}

t=$SECONDS
wait_for 90 "every node counting race2048_cluster_nodes 3" all_see 3 "${NODES[@]}"
log "all three nodes see race2048_cluster_nodes 3 ($((SECONDS - t)) s after up)"

# Which node has which number (the high bits of the ids it hands out).
declare -A NODE_OF
for node in "${NODES[@]}"; do
    number=$("$DOCKER" logs "$(container "$node")" 2>&1 \
        | sed -n "s/.* node $node (number \([0-9]*\)) joined the cluster.*/\1/p" | tail -1)
    [ -n "$number" ] || { log "$node's log does not say its node number"; exit 1; }
    NODE_OF[$number]=$node
done

# client.py: the two racers and the probes, one phase per run; what they know
# between phases (ids, tokens, boards) is kept in $WORK/race.json.
cat >"$WORK/client.py" <<'EOF'
import json, socket, sys, time

PORT, PHASE, STATE = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ARGS = sys.argv[4:]
DIRS = ["left", "up", "right", "down"]
KEYS = ["board", "score", "moves", "max_tile", "status"]
# A cluster's room code carries the number of the node that made it: 30 bits
# (6 of ALPHABET), node << 18 | random, mixed by v * MIX_MUL + MIX_ADD mod
# 2^30, then v ^ v >> 15 (server/game/room.c).
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
MIX_MUL, MIX_ADD = 0x2545F491, 0x1B873593


def fail(why):
    print("client %s: %s" % (PHASE, why), file=sys.stderr)
    sys.exit(1)


class Refused(Exception):
    """An error or bye where a reply was expected."""


class Conn:
    def __init__(self, name, timeout=5):
        self.name, self.buf = name, b""
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)

    def send(self, msg):
        self.sock.sendall((json.dumps(msg) + "\n").encode())

    def expect(self, want, pred=lambda m: True, timeout=10, refused=None):
        """The next message of type `want` satisfying pred, skipping others
        (player notices, other players' states); an error or EOF fails, or
        raises `refused` when given."""
        deadline = time.time() + timeout
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if not line.startswith(b"{"):
                    continue
                m = json.loads(line)
                if m["type"] == want and pred(m):
                    return m
                if m["type"] in ("error", "bye"):
                    if refused:
                        raise refused(line.decode())
                    fail("%s waiting for %s got %s" % (self.name, want, line.decode()))
            left = deadline - time.time()
            if left <= 0:
                fail("%s: no %s within %d s" % (self.name, want, timeout))
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                if refused:
                    raise refused("connection closed")
                fail("%s: connection closed waiting for %s" % (self.name, want))
            self.buf += chunk

    def close(self):
        self.sock.close()


def code_node(code):
    """The number of the node that made room code."""
    v = 0
    for ch in code:
        v = v << 5 | ALPHABET.index(ch)
    v ^= v >> 15
    return ((v - MIX_ADD) * pow(MIX_MUL, -1, 1 << 30)) % (1 << 30) >> 18


def node_of(conn, timeout=10):
    """The node conn is connected to: the one that makes its room (a room of
    one, left at once)."""
    conn.send({"type": "create", "players": 2})
    code = conn.expect("room", timeout=timeout)["room"]
    conn.send({"type": "leave"})
    conn.expect("left", timeout=timeout)
    return code_node(code)


def ping(timeout):
    """One connection through the balancer: the node that answered the ping
    (the node its room is made on)."""
    c = Conn("ping", timeout)
    c.send({"type": "ping", "t": 1})
    c.expect("welcome", timeout=timeout)
    c.expect("pong", timeout=timeout)
    n = node_of(c, timeout)
    c.close()
    return n


def wait_ready(timeout=60):
    """The balancer accepts before any node is up behind it and then
    closes: the cluster is up when a ping gets its pong."""
    deadline, why = time.time() + timeout, ""
    while time.time() < deadline:
        try:
            c = Conn("ready", 3)
            c.send({"type": "ping", "t": 1})
            c.expect("pong", timeout=3, refused=Refused)
            c.close()
            return
        except (OSError, Refused) as e:
            why = str(e)
        time.sleep(0.2)
    fail("balancer not answering on 127.0.0.1:%d within %d s: %s" % (PORT, timeout, why))


def move(conn, me, seq, dirs):
    """Tries dirs in turn until one changes the board (a board where none
    does is over); returns the mover's player object from its state."""
    for d in dirs:
        seq[0] += 1
        conn.send({"type": "move", "dir": d, "seq": seq[0]})
        st = conn.expect("state", lambda m: m["id"] == me and m["seq"] == seq[0])
        if st["moved"]:
            return st
    return st


def pick(p):
    return {k: p[k] for k in KEYS}


def play():
    a, b = Conn("A"), Conn("B")
    a.send({"type": "hello", "name": "cluster-a"})
    wa = a.expect("welcome")
    a.send({"type": "create", "players": 2, "size": 4, "target": 2048})
    code = a.expect("room")["room"]
    b.send({"type": "hello", "name": "cluster-b"})
    wb = b.expect("welcome")
    node_a, node_b = code_node(code), node_of(b)
    if ARGS == ["same-node"]:
        # Least connections: holding one on each node, a new one may go to
        # any, A's too.
        held = []
        while node_b != node_a:
            if len(held) == 12:
                fail("B did not land on A's node (number %d) in 12 connections" % node_a)
            held.append(b)
            b = Conn("B")
            b.send({"type": "hello", "name": "cluster-b"})
            wb = b.expect("welcome")
            node_b = node_of(b)
        for c in held:
            c.close()
    b.send({"type": "join", "room": code})
    b.expect("start")
    a.expect("start")
    seq, players = [0], {}
    for i in range(4):
        for c, w in ((a, wa), (b, wb)):
            st = move(c, w["id"], seq, DIRS[i % 4:] + DIRS[:i % 4])
            players[str(w["id"])] = pick(st)
    json.dump({"room": code, "seq": seq[0], "players": players,
               "creator_node": node_a,
               "tokens": {str(wa["id"]): wa["token"], str(wb["id"]): wb["token"]}},
              open(STATE, "w"))
    print("played 4 moves each in room %s (A on node number %d, B on %d): scores %s" %
          (code, node_a, node_b,
           ", ".join("%s=%d" % (i, p["score"]) for i, p in players.items())))


def resume_one(st, pid, token, deadline):
    """Resumes player pid through the balancer, retrying (once a second:
    failed resumes are limited per address, and every player here has the
    balancer's) until its room runs again somewhere; checks the snapshot."""
    why = ""
    while time.time() < deadline:
        try:
            c = Conn("player " + pid, 3)
            c.send({"type": "resume", "token": token})
            # A resume made while the room is being taken over is answered
            # once it is (the server asks again until then): wait for it.
            w = c.expect("welcome", timeout=max(1, deadline - time.time()), refused=Refused)
            start = c.expect("start", timeout=5, refused=Refused)
            break
        except (OSError, Refused) as e:
            why = str(e)
            time.sleep(1)
    else:
        fail("player %s: no resume through the balancer in time (last: %s)" % (pid, why))
    if str(w["id"]) != pid:
        fail("resume with player %s's token gave id %s" % (pid, w["id"]))
    if start.get("room") != st["room"] or start.get("you") != w["id"]:
        fail("start snapshot for %s: room %s you %s, want room %s" %
             (pid, start.get("room"), start.get("you"), st["room"]))
    got = {str(p["id"]): pick(p) for p in start["players"]}
    if got != st["players"]:
        fail("start snapshot differs from before the kill:\n  had %s\n  got %s" %
             (json.dumps(st["players"], sort_keys=True), json.dumps(got, sort_keys=True)))
    return c, w


def resume():
    killed_at, limit = float(ARGS[0]), float(ARGS[1])
    st = json.load(open(STATE))
    seq, conns = [st["seq"]], []
    for pid, token in st["tokens"].items():
        conns.append(resume_one(st, pid, token, killed_at + limit))
    took = time.time() - killed_at
    for c, w in conns:
        after = move(c, w["id"], seq, DIRS)
        st["players"][str(w["id"])] = pick(after)
    print("both players resumed in room %s %.1f s after the kill, with the boards they had, "
          "and moved on: scores %s" % (st["room"], took,
          ", ".join("%s=%d" % (i, p["score"]) for i, p in st["players"].items())))


def ping_once():
    """The balancer answers right after a kill: one connection, one pong
    (a connect to the dead node is retried on another)."""
    t = time.time()
    try:
        n = ping(15)
    except OSError as e:
        fail("no pong through the balancer: %s" % e)
    print("pong through the balancer from node number %d in %.2f s" % (n, time.time() - t))


def spread():
    """Nodes seen by new connections: the numbers of those that answered,
    until each of the given numbers has (or 40 tries)."""
    want, seen = set(int(a) for a in ARGS), set()
    for _ in range(40):
        seen.add(ping(10))
        if want <= seen:
            print("new connections reached node numbers %s" % sorted(seen))
            return
    fail("new connections reached only node numbers %s, want %s" % (sorted(seen), sorted(want)))


def avoid():
    """10 new connections through the balancer: all must go to node number
    ARGS[0] (the other live node is drained)."""
    good, seen = int(ARGS[0]), []
    for _ in range(10):
        seen.append(ping(10))
    if set(seen) != {good}:
        fail("new connections went to node numbers %s, want only %d" % (seen, good))
    print("10 new connections all went to node number %d" % good)


{"ready": wait_ready, "play": play, "resume": resume, "ping": ping_once,
 "spread": spread, "avoid": avoid}[PHASE]()
EOF

client() { python3 "$WORK/client.py" "$HOST_PORT" "$1" "$WORK/race.json" "${@:2}"; }

client ready
if [ "$SAME_NODE" = 1 ]; then client play same-node; else client play; fi
# A room runs on the node it was created on: kill that one.
creator=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["creator_node"])' "$WORK/race.json")
VICTIM=${NODE_OF[$creator]:-}
[ -n "$VICTIM" ] || { log "the creator's node number $creator is none of the nodes'"; exit 1; }
SURVIVORS=()
for node in "${NODES[@]}"; do [ "$node" = "$VICTIM" ] || SURVIVORS+=("$node"); done

# Past the journal's sync window (and JetStream's: the same group commit),
# as in verify-restart.sh: what a kill may lose inside it is allowed.
sleep 1
log "docker kill -s KILL $VICTIM (node number $creator, where the room was created)"
killed_at=$(date +%s.%N)
t=$SECONDS
"$DOCKER" kill -s KILL "$(container "$VICTIM")" >/dev/null
client ping
if [ "$TAKEOVER" = 1 ]; then
    client resume "$killed_at" 15
else
    log "--no-takeover: not resuming the race"
fi
wait_for 15 "${SURVIVORS[*]} counting race2048_cluster_nodes 2" all_see 2 "${SURVIVORS[@]}"
log "${SURVIVORS[*]} see race2048_cluster_nodes 2 ($((SECONDS - t)) s after the kill)"
wait_for 15 "the balancer marking $VICTIM DOWN" balancer_sees "$VICTIM" DOWN
log "the balancer has $VICTIM DOWN ($((SECONDS - t)) s after the kill)"

# A node cut off from NATS says 503 and the balancer sends it no new player.
declare -A NUMBER_OF
for number in "${!NODE_OF[@]}"; do NUMBER_OF[${NODE_OF[$number]}]=$number; done
cut=${SURVIVORS[0]} kept=${SURVIVORS[1]}
client spread "${NUMBER_OF[$cut]}" "${NUMBER_OF[$kept]}"
back_net=${PROJECT}_back # compose.cluster.yaml's network of the nodes and NATS
log "docker network disconnect $back_net $cut (its way to NATS)"
t=$SECONDS
"$DOCKER" network disconnect "$back_net" "$(container "$cut")"
healthz_is() { [ "$(healthz_status "$1")" = "$2" ]; }
wait_for 20 "$cut's /healthz saying 503" healthz_is "$cut" 503
log "$cut's /healthz says 503 ($((SECONDS - t)) s after the cut)"
# HAProxy checks every 2 s: it drains $cut (no new players) at the next.
wait_for 10 "the balancer draining $cut" balancer_sees "$cut" NOLB
log "the balancer drains $cut ($((SECONDS - t)) s after the cut)"
client avoid "${NUMBER_OF[$kept]}"
"$DOCKER" network connect "$back_net" "$(container "$cut")"
t=$SECONDS
wait_for 30 "$cut's /healthz saying 200 again" healthz_is "$cut" 200
log "$cut back on NATS: /healthz 200 ($((SECONDS - t)) s after it was connected again)"
