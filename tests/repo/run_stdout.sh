#!/usr/bin/env bash
# run_stdout.sh BUILD_DIR RACE2048D - scripts/run keeps stdout for race2048d's `listening on`
# line and its `http on` line after it: cmake's output goes to stderr.
# A fake cmake on PATH stands in for the real one (no second Release build inside ctest):
# it checks scripts/run's cmake arguments, prints what a build prints on its stdout, and
# "builds" BUILD_DIR/server/race2048d as a link to RACE2048D, the server ctest built.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:?usage: run_stdout.sh BUILD_DIR RACE2048D}
SERVER=${2:?usage: run_stdout.sh BUILD_DIR RACE2048D}
ERR=$BUILD.stderr
FAKE=$BUILD.fake
rm -rf "$BUILD" "$FAKE"
mkdir -p "$FAKE"

fail() {
    printf 'run_stdout: %s\n' "$*" >&2
    printf -- '--- stderr of scripts/run ---\n' >&2
    tail -n 40 "$ERR" >&2 || true
    exit 1
}

cat >"$FAKE/cmake" <<'FAKE_EOF'
#!/usr/bin/env bash
# The configure and the build scripts/run asks for, checked, and their output on stdout.
set -euo pipefail
echo "cmake $*" >>"$FAKE_LOG"
if [ "$1" = --build ]; then
    [ "$2" = "$FAKE_BUILD" ] || { echo "fake cmake: built in '$2'" >&2; exit 1; }
    mkdir -p "$2/server"
    ln -sf "$FAKE_SERVER" "$2/server/race2048d"
    echo "[100%] Built target race2048d"
else
    [[ " $* " == *" -B $FAKE_BUILD "* && " $* " == *" -DCMAKE_BUILD_TYPE=Release "* ]] ||
        { echo "fake cmake: configured with '$*'" >&2; exit 1; }
    echo "-- Build files have been written to: $FAKE_BUILD"
fi
FAKE_EOF
chmod +x "$FAKE/cmake"
export FAKE_LOG=$FAKE/log FAKE_BUILD=$BUILD FAKE_SERVER=$SERVER PATH=$FAKE:$PATH

# scripts/run execs the server, so $pid is race2048d once built. The pipe
# stays open here until this script ends, whenever the server exits.
exec {out}< <(RACE2048_BUILD_DIR=$BUILD RACE2048_JOBS=1 exec "$ROOT/scripts/run" --host 127.0.0.1 --port 0 \
    --http-port 0 --log-level warn 2>"$ERR")
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT

IFS= read -r -t 60 -u "$out" first || fail "no line on stdout within 60 s"
[[ $first =~ ^race2048d\ listening\ on\ 127\.0\.0\.1:[0-9]+$ ]] ||
    fail "the first stdout line is not the server's: '$first'"
grep -q 'Built target race2048d' "$ERR" || fail "cmake's build output is not on stderr"
[ "$(grep -c '^cmake ' "$FAKE_LOG")" -eq 2 ] || fail "scripts/run did not configure, then build"
IFS= read -r -t 30 -u "$out" second || fail "no second line on stdout within 30 s"
[[ $second =~ ^race2048d\ http\ on\ 127\.0\.0\.1:[0-9]+$ ]] ||
    fail "the second stdout line is not the http port's: '$second'"

kill -TERM "$pid"
rest=$(timeout 30 cat <&"$out") || fail "stdout did not close after SIGTERM"
wait "$pid" || fail "race2048d exited with $? after SIGTERM"
trap - EXIT
[ -z "$rest" ] || fail "more on stdout after the http line: '$rest'"
rm -rf "$BUILD" "$FAKE"
echo "run_stdout: ok ($first; $second)"
