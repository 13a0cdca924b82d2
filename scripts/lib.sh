# scripts/lib.sh - shared steps of scripts/run and scripts/test: deps, paths, loud failures.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=$(nproc 2>/dev/null || echo 2)

step() { printf '\n==> %s\n' "$*" >&2; }
trap 'rc=$?; printf "\n!! %s failed (exit %d) at: %s\n" "$(basename "$0")" "$rc" "$BASH_COMMAND" >&2' ERR

# need_packages PKG...: apt-get install whatever of PKG is not installed yet.
need_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    step "installing ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

BUILD_PACKAGES=(build-essential cmake pkg-config libuv1-dev libjansson-dev libssl-dev uthash-dev)
