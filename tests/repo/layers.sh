#!/usr/bin/env bash
# layers.sh - server/'s layers hold: every file is in server/README.md's table, and
# every #include of a server header points to the same layer or one below.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
readme="$root/server/README.md"
declare -A level
# Rows of the table: | N | layer | `file` `file` ... |
while IFS= read -r row; do
    n="$(printf '%s\n' "$row" | awk -F'|' '{gsub(/ /, "", $2); print $2}')"
    for f in $(printf '%s\n' "$row" | grep -o '`[A-Za-z0-9_.]*`' | tr -d '`'); do
        level[$f]=$n
    done
done < <(grep -E '^\| [0-9]+ \|' "$readme")
[ "${#level[@]}" -gt 0 ] || { echo "layers: no layer table in server/README.md"; exit 1; }
bad=0
for path in "$root"/server/*.c "$root"/server/*.h; do
    f="$(basename "$path")"
    if [ -z "${level[$f]:-}" ]; then
        echo "layers: server/$f is in no layer of server/README.md"
        bad=1
        continue
    fi
    while IFS= read -r inc; do
        [ -e "$root/server/$inc" ] || continue # protocol/ or engine/: below every layer
        if [ -z "${level[$inc]:-}" ]; then
            echo "layers: server/$f includes $inc, which is in no layer"
            bad=1
        elif [ "${level[$inc]}" -gt "${level[$f]}" ]; then
            echo "layers: server/$f (layer ${level[$f]}) includes $inc (layer ${level[$inc]}): an arrow points up"
            bad=1
        fi
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$path")
done
[ "$bad" -eq 0 ] && echo "layers: ${#level[@]} files, every include points down"
exit "$bad"
