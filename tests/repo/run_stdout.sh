#!/usr/bin/env bash
# run_stdout.sh BUILD_DIR - scripts/run keeps stdout for race2048d's `listening on` line
# and its `http on` line after it: cmake's output goes to stderr.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:?usage: run_stdout.sh BUILD_DIR}
ERR=$BUILD.stderr

fail() {
    printf 'run_stdout: %s\n' "$*" >&2
    printf -- '--- stderr of scripts/run ---\n' >&2
    tail -n 40 "$ERR" >&2 || true
    exit 1
}

# scripts/run execs the server, so $pid is race2048d once built. One build job:
# ctest runs other tests beside this one. The pipe
# stays open here until this script ends, whenever the server exits.
exec {out}< <(RACE2048_BUILD_DIR=$BUILD RACE2048_JOBS=1 exec "$ROOT/scripts/run" --host 127.0.0.1 --port 0 \
    --http-port 0 --log-level warn 2>"$ERR")
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT

# The build may take a few minutes on a cold, busy machine.
IFS= read -r -t 600 -u "$out" first || fail "no line on stdout within 600 s"
[[ $first =~ ^race2048d\ listening\ on\ 127\.0\.0\.1:[0-9]+$ ]] ||
    fail "the first stdout line is not the server's: '$first'"
grep -q 'Built target race2048d' "$ERR" || fail "cmake's build output is not on stderr"
IFS= read -r -t 30 -u "$out" second || fail "no second line on stdout within 30 s"
[[ $second =~ ^race2048d\ http\ on\ 127\.0\.0\.1:[0-9]+$ ]] ||
    fail "the second stdout line is not the http port's: '$second'"

kill -TERM "$pid"
rest=$(timeout 30 cat <&"$out") || fail "stdout did not close after SIGTERM"
wait "$pid" || fail "race2048d exited with $? after SIGTERM"
trap - EXIT
[ -z "$rest" ] || fail "more on stdout after the http line: '$rest'"
echo "run_stdout: ok ($first; $second)"
