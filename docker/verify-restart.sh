#!/usr/bin/env bash
# docker/verify-restart.sh - CI check that a race in the Docker image survives `docker restart` and `docker kill -s KILL`.
#
# Runs after the CI machine's verify-docker.sh (see .ci/run), on the dockerd
# that it left running (VERIFY_KEEP_DAEMON=1) and the image race2048d:latest
# that its compose check built (built here from docker/Dockerfile if absent).
#   1. docker run -d the image as compose.yaml does (read-only root, no
#      capabilities, a named volume on /var/lib/race2048) on 127.0.0.1:PORT;
#   2. two JSON clients race: create + join, a few moves each; their boards,
#      scores and tokens are noted, then they disconnect;
#   3. docker restart (SIGTERM: the server flushes its journal and exits);
#      both players `resume` with their tokens: the `start` snapshot must show
#      exactly the boards, scores, move counts and statuses they had; each
#      plays one more move and gets its `state`;
#   4. docker kill -s KILL, once that last move is past the journal's sync
#      window, then docker start: resume and compare again, one more move;
#   5. one player leaves, both get `end` (forfeit), and race2048-replay inside
#      the container checks the journal (exit 0).
# Prints "verify-restart: PASS" or "verify-restart: FAIL ..." last; exits
# non-zero on failure. Only loopback is used. Containers and the volume it made
# are removed on exit, on failure too.
#
# Usage: docker/verify-restart.sh [options]
#   -H, --host-port PORT  loopback port to publish the server on (default 17002)
#   --image IMAGE         image to run (default race2048d:latest)
#   -e, --env K=V         passed to `docker run` (repeatable); e.g.
#                         RACE2048_JOURNAL=none must make this check fail
#   --stop-daemon         on exit, stop the dockerd verify-docker.sh started
#                         (its pidfile in /run/verify-docker); .ci/run passes it
#                         when that dockerd was not already running before
#   --drop-bridge         with --stop-daemon: also delete docker0 (dockerd
#                         leaves it behind; pass it when it did not exist before)
#   --cleanup-only        check nothing, only do the cleanup above (used by
#                         .ci/run when verify-docker.sh itself failed)
# Needs root (the dockerd's socket), python3 (verify-docker.sh installs it)
# and /usr/bin/docker.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

HOST_PORT=17002
IMAGE=race2048d:latest
STOP_DAEMON=0
DROP_BRIDGE=0
CLEANUP_ONLY=0
RUN_ENV=()
while [ $# -gt 0 ]; do
    case "$1" in
        -H | --host-port) HOST_PORT=$2; shift 2 ;;
        --image) IMAGE=$2; shift 2 ;;
        -e | --env) RUN_ENV+=(-e "$2"); shift 2 ;;
        --stop-daemon) STOP_DAEMON=1; shift ;;
        --drop-bridge) DROP_BRIDGE=1; shift ;;
        --cleanup-only) CLEANUP_ONLY=1; shift ;;
        -h | --help) sed -n '/^# Usage:/,/^# Needs root/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "verify-restart: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
done

RUN_DIR=/run/verify-docker
export DOCKER_HOST=unix://$RUN_DIR/docker.sock
DOCKER=/usr/bin/docker
NAME=race2048-restart-$$
VOLUME=race2048-restart-$$
WORK=$(mktemp -d /tmp/verify-restart.XXXXXX)
BUILT_IMAGE=0
T0=$SECONDS

log() { printf '[verify-restart %s] %s\n' "$(date +%T)" "$*" >&2; }

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
    if [ "$CLEANUP_ONLY" = 0 ]; then
        if [ $rc != 0 ]; then
            log "server log (last 30 lines):"
            "$DOCKER" logs --tail 30 "$NAME" >&2 2>&1
        fi
        "$DOCKER" rm -f "$NAME" >/dev/null 2>&1
        "$DOCKER" volume rm -f "$VOLUME" >/dev/null 2>&1
        [ "$BUILT_IMAGE" = 1 ] && "$DOCKER" rmi -f "$IMAGE" >/dev/null 2>&1
    fi
    stop_daemon
    rm -rf "$WORK"
    if [ "$CLEANUP_ONLY" = 0 ]; then
        if [ $rc = 0 ]; then
            echo "verify-restart: PASS ($((SECONDS - T0)) s)" >&2
        else
            echo "verify-restart: FAIL (rc=$rc)" >&2
        fi
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$CLEANUP_ONLY" = 1 ] && exit 0
[ "$(id -u)" = 0 ] || { log "must run as root (the dockerd socket is root's)"; exit 2; }
command -v python3 >/dev/null || { log "python3 is missing (verify-docker.sh installs it)"; exit 2; }
# No lock taken here: the dockerd that verify-docker.sh left running holds its
# lock (/run/verify-docker.lock, inherited), so no other run can start, or
# stop that dockerd, until it is stopped below.
"$DOCKER" info >/dev/null 2>&1 || { log "no dockerd on $DOCKER_HOST (run verify-docker.sh with VERIFY_KEEP_DAEMON=1 first)"; exit 1; }

if ! "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; then
    log "building $IMAGE from docker/Dockerfile"
    DOCKER_BUILDKIT=1 "$DOCKER" build -q -f docker/Dockerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 \
        || { tail -30 "$WORK/build.log" >&2; exit 1; }
    BUILT_IMAGE=1
fi

# client.py: the two racers, one phase per run; what they know between
# phases (ids, tokens, boards) is kept in $WORK/race.json.
cat >"$WORK/client.py" <<'EOF'
import json, socket, sys, time

PORT, PHASE, STATE = int(sys.argv[1]), sys.argv[2], sys.argv[3]
DIRS = ["left", "up", "right", "down"]
KEYS = ["board", "score", "moves", "max_tile", "status"]


def fail(why):
    print("client %s: %s" % (PHASE, why), file=sys.stderr)
    sys.exit(1)


class Conn:
    def __init__(self, name):
        self.name, self.buf = name, b""
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=5)

    def send(self, msg):
        self.sock.sendall((json.dumps(msg) + "\n").encode())

    def expect(self, want, pred=lambda m: True, timeout=10):
        """The next message of type `want` satisfying pred, skipping others
        (player notices, other players' states); an error or EOF fails."""
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
                fail("%s: connection closed waiting for %s" % (self.name, want))
            self.buf += chunk


def wait_ready(timeout=30):
    """Docker's proxy accepts before the server listens and then closes at
    once: the server is up when a ping gets its pong."""
    deadline, why = time.time() + timeout, ""
    while time.time() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", PORT), timeout=2)
            s.sendall(b'{"type":"ping","t":1}\n')
            buf, t_end = b"", time.time() + 3
            while b'"pong"' not in buf and time.time() < t_end:
                s.settimeout(max(0.1, t_end - time.time()))
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
            s.close()
            if b'"pong"' in buf:
                return
            why = "no pong (got %r)" % buf[:100]
        except OSError as e:
            why = str(e)
        time.sleep(0.2)
    fail("server not answering on 127.0.0.1:%d within %d s: %s" % (PORT, timeout, why))


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
    a.send({"type": "hello", "name": "restart-a"})
    wa = a.expect("welcome")
    a.send({"type": "create", "players": 2, "size": 4, "target": 2048})
    code = a.expect("room")["room"]
    b.send({"type": "hello", "name": "restart-b"})
    wb = b.expect("welcome")
    b.send({"type": "join", "room": code})
    a.expect("start")
    b.expect("start")
    seq, players = [0], {}
    for i in range(4):
        for c, w in ((a, wa), (b, wb)):
            st = move(c, w["id"], seq, DIRS[i % 4:] + DIRS[:i % 4])
            players[str(w["id"])] = pick(st)
    json.dump({"room": code, "seq": seq[0], "players": players,
               "tokens": {str(wa["id"]): wa["token"], str(wb["id"]): wb["token"]}},
              open(STATE, "w"))
    print("played 4 moves each in room %s: scores %s" %
          (code, ", ".join("%s=%d" % (i, p["score"]) for i, p in players.items())))


def resume():
    wait_ready()
    st = json.load(open(STATE))
    seq, conns = [st["seq"]], []
    for pid, token in st["tokens"].items():
        c = Conn("player " + pid)
        c.send({"type": "resume", "token": token})
        w = c.expect("welcome")
        if str(w["id"]) != pid:
            fail("resume with player %s's token gave id %s" % (pid, w["id"]))
        start = c.expect("start")
        if start.get("room") != st["room"] or start.get("you") != w["id"]:
            fail("start snapshot for %s: room %s you %s, want room %s" %
                 (pid, start.get("room"), start.get("you"), st["room"]))
        got = {str(p["id"]): pick(p) for p in start["players"]}
        if got != st["players"]:
            fail("start snapshot differs from before the restart:\n  had %s\n  got %s" %
                 (json.dumps(st["players"], sort_keys=True), json.dumps(got, sort_keys=True)))
        st["tokens"][pid] = w["token"]
        conns.append((c, w))
    for c, w in conns:
        after = move(c, w["id"], seq, DIRS)
        st["players"][str(w["id"])] = pick(after)
    st["seq"] = seq[0]
    json.dump(st, open(STATE, "w"))
    print("both players resumed in room %s with the boards they had, and moved on: scores %s" %
          (st["room"], ", ".join("%s=%d" % (i, p["score"]) for i, p in st["players"].items())))


def finish():
    wait_ready()
    st = json.load(open(STATE))
    (ida, ta), (idb, tb) = st["tokens"].items()
    a, b = Conn("A"), Conn("B")
    for c, t in ((a, ta), (b, tb)):
        c.send({"type": "resume", "token": t})
        c.expect("start")
    a.send({"type": "leave"})
    for c in (a, b):
        end = c.expect("end")
        if end["reason"] != "forfeit" or str(end["winner"]) != idb:
            fail("end after A left: reason %s winner %s, want forfeit %s" %
                 (end["reason"], end["winner"], idb))
    a.expect("left")
    print("A left, both got end (forfeit, winner %s)" % idb)


{"ready": wait_ready, "play": play, "resume": resume, "finish": finish}[PHASE]()
EOF

client() { python3 "$WORK/client.py" "$HOST_PORT" "$1" "$WORK/race.json"; }

log "run $IMAGE as $NAME on 127.0.0.1:$HOST_PORT, volume $VOLUME"
"$DOCKER" volume create "$VOLUME" >/dev/null
# As compose.yaml runs it: read-only root, no capabilities, the named volume.
"$DOCKER" run -d --name "$NAME" -p "127.0.0.1:$HOST_PORT:2048" \
    -v "$VOLUME:/var/lib/race2048" --read-only --cap-drop ALL \
    --security-opt no-new-privileges:true "${RUN_ENV[@]}" "$IMAGE" >/dev/null
client ready
client play

log "docker restart (SIGTERM; the journal keeps the race)"
t=$SECONDS
"$DOCKER" restart -t 10 "$NAME" >/dev/null
code=$("$DOCKER" inspect -f '{{.State.Running}}' "$NAME")
[ "$code" = true ] || { log "not running after restart"; exit 1; }
client resume
log "restart + resume: $((SECONDS - t)) s"

# The last move's state is acknowledged; the journal makes it durable within
# its sync window (RACE2048_JOURNAL_SYNC_MS, 100 ms). Wait well past it: what
# a kill may lose inside the window is allowed by the contract, not tested here.
sleep 1
log "docker kill -s KILL, docker start"
t=$SECONDS
"$DOCKER" kill -s KILL "$NAME" >/dev/null
"$DOCKER" start "$NAME" >/dev/null
client resume
log "kill + start + resume: $((SECONDS - t)) s"

client finish
# docker stop: SIGTERM, the server flushes its journal (the finished race is
# in it now, whatever the sync window) and exits 0.
"$DOCKER" stop -t 10 "$NAME" >/dev/null
code=$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$NAME")
[ "$code" = 0 ] || { log "race2048d exited with status $code on SIGTERM, want 0"; exit 1; }
# The journal holds the race across both restarts: it must re-play to the
# recorded results, and it must be there (the only game on this volume).
"$DOCKER" run --rm -v "$VOLUME:/var/lib/race2048:ro" --entrypoint race2048-replay \
    "$IMAGE" race2048.journal >"$WORK/replay.log" 2>&1 \
    || { log "race2048-replay failed:"; cat "$WORK/replay.log" >&2; exit 1; }
summary=$(tail -1 "$WORK/replay.log")
log "race2048-replay: $summary"
case "$summary" in
    "1 game checked, 0 failed"*) ;;
    *) log "want the one finished race checked"; exit 1 ;;
esac
