#!/usr/bin/env bash
# apt_lock.sh - scripts/lib.sh waits for another apt's lock instead of failing, and says so.
# A fake apt-get and dpkg-query on PATH stand in for the real ones.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FAKE=$(mktemp -d)
trap 'rm -rf "$FAKE"' EXIT

# dpkg-query: nothing is installed. apt-get: logs its arguments; `update`
# fails on the lists lock twice (as while unattended-upgrades runs), then works.
cat >"$FAKE/dpkg-query" <<'FAKE_EOF'
#!/bin/sh
exit 1
FAKE_EOF
cat >"$FAKE/apt-get" <<'FAKE_EOF'
#!/bin/sh
echo "$*" >>"$FAKE_LOG"
case " $* " in
*" update "*)
    n=$(grep -c ' update' "$FAKE_LOG")
    if [ "$n" -le 2 ]; then
        echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 42 (apt-get)" >&2
        exit 100
    fi ;;
esac
exit 0
FAKE_EOF
chmod +x "$FAKE/dpkg-query" "$FAKE/apt-get"
export FAKE_LOG=$FAKE/log PATH=$FAKE:$PATH APT_LOCK_RETRY=0

fail() {
    printf 'apt_lock: %s\n' "$*" >&2
    exit 1
}

# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"
SUDO=() # never the real sudo here
err=$(need_packages some-package 2>&1) || fail "need_packages failed: $err"

grep -q 'waiting up to 300 s' <<<"$err" || fail "it did not say it waits: '$err'"
[ "$(grep -c ' update' "$FAKE_LOG")" -eq 3 ] || fail "update was not retried: $(cat "$FAKE_LOG")"
grep -q -- '-o DPkg::Lock::Timeout=300 install .*some-package' "$FAKE_LOG" ||
    fail "install does not wait for the dpkg lock: $(cat "$FAKE_LOG")"
grep -vq 'DPkg::Lock::Timeout=300' "$FAKE_LOG" && fail "an apt-get call without the lock timeout"

# Another failure than the lock is not retried.
: >"$FAKE_LOG"
cat >"$FAKE/apt-get" <<'FAKE_EOF'
#!/bin/sh
echo "$*" >>"$FAKE_LOG"
echo "E: The repository is not signed." >&2
exit 100
FAKE_EOF
if err=$(need_packages some-package 2>&1); then fail "a failing update was not an error"; fi
[ "$(grep -c ' update' "$FAKE_LOG")" -eq 1 ] || fail "a non-lock failure was retried"
grep -q 'not signed' <<<"$err" || fail "apt's message was not shown: '$err'"
echo "apt_lock: ok"
