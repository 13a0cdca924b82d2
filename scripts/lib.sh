# scripts/lib.sh - shared steps of scripts/run and scripts/test: deps, paths, loud failures.
# shellcheck shell=bash disable=SC2034  # sourced: the variables are used by the scripts
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${RACE2048_JOBS:-$(nproc 2>/dev/null || echo 2)} # parallel build jobs

step() { printf '\n==> %s\n' "$*" >&2; }
# shellcheck disable=SC2154  # rc is assigned inside the trap string
trap 'rc=$?; printf "\n!! %s failed (exit %d) at: %s\n" "$(basename "$0")" "$rc" "$BASH_COMMAND" >&2' ERR

# APT_LOCK_WAIT: seconds to wait for another apt or dpkg (unattended-upgrades,
# cloud-init on a fresh machine) to release its lock before giving up.
APT_LOCK_WAIT=${APT_LOCK_WAIT:-300}
APT_LOCK_RETRY=${APT_LOCK_RETRY:-5} # seconds between two tries of apt-get update
SUDO=()
[ "$(id -u)" -eq 0 ] || SUDO=(sudo)

# apt_update: apt-get update, waiting for the package lists' lock. apt's
# DPkg::Lock::Timeout covers the dpkg lock; older apt versions do not apply it
# to /var/lib/apt/lists/lock, so a lock failure is retried here until
# APT_LOCK_WAIT has passed.
apt_update() {
    local out waited=0
    while ! out=$("${SUDO[@]}" apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" update -qq 2>&1); do
        if ! grep -qi 'lock' <<<"$out" || [ "$waited" -ge "$APT_LOCK_WAIT" ]; then
            printf '%s\n' "$out" >&2
            return 1
        fi
        if [ "$waited" -eq 0 ]; then
            printf 'another apt process holds the package lists lock: waiting up to %d s\n' \
                "$APT_LOCK_WAIT" >&2
        fi
        sleep "$APT_LOCK_RETRY"
        waited=$((waited + APT_LOCK_RETRY))
    done
}

# need_packages PKG...: apt-get install whatever of PKG is not installed yet.
# If another apt or dpkg is running, waits up to APT_LOCK_WAIT seconds for it.
need_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    step "installing ${missing[*]} (waiting up to ${APT_LOCK_WAIT} s if another apt or dpkg holds its lock)"
    apt_update || return 1
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" \
        install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

BUILD_PACKAGES=(build-essential cmake pkg-config libuv1-dev libjansson-dev libssl-dev
                libhttp-parser-dev libwslay-dev uthash-dev libnats-dev)
