#!/bin/sh
# arena_crowd_load.sh - runs test_server_arena_crowd RUNS times, alone or beside
# LOAD busy loops (one per core by default), and prints each run's innocent ping
# p50/p99/max and bound. Usage: arena_crowd_load.sh BUILD_DIR [RUNS] [LOAD]
set -eu
build=${1:?usage: $0 BUILD_DIR [RUNS] [LOAD]}
runs=${2:-3}
load=${3:-0}
pids=""
i=0
while [ "$i" -lt "$load" ]; do
    sh -c 'while :; do :; done' &
    pids="$pids $!"
    i=$((i + 1))
done
trap '[ -z "$pids" ] || kill $pids' EXIT
export RACE2048D="$build/server/race2048d"
r=1
while [ "$r" -le "$runs" ]; do
    line=$("$build/tests/server/test_server_arena_crowd" 2>&1 | grep -E 'entrants \(|FAILED  \] t' | head -2 | tr '\n' ' ')
    echo "$line" | sed -n 's/.*ping p50 \([0-9]*\) ms, p99 \([0-9]*\) ms, max \([0-9]*\) ms over \([0-9]*\) pings (p99 before the crowd \([0-9]*\) ms, bound \([0-9]*\) ms).*/p50 \1 p99 \2 max \3 pings \4 baseline \5 bound \6/p' |
        sed "s/^/run $r load $load: /"
    case "$line" in *FAILED*) echo "run $r: FAILED" ;; esac
    r=$((r + 1))
done
