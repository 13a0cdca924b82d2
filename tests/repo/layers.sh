#!/usr/bin/env bash
# layers.sh - server/'s layers hold: every folder of server/ is a row of server/README.md's
# table, and every #include of a server header points to the same folder or one below.
# (The build enforces the same through include paths; calls.sh checks the calls.)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
readme="$root/server/README.md"
declare -A rank home
# Rows of the table: | N | `folder/` | layer | what |
while IFS= read -r row; do
    n="$(printf '%s\n' "$row" | awk -F'|' '{gsub(/ /, "", $2); print $2}')"
    folder="$(printf '%s\n' "$row" | grep -o '`[a-z_]*/`' | head -1 | tr -d '`/' || true)"
    if [ -n "$folder" ]; then rank[$folder]=$n; fi
done < <(grep -E '^\| [0-9]+ \|' "$readme")
[ "${#rank[@]}" -gt 0 ] || { echo "layers: no layer table in server/README.md"; exit 1; }
bad=0
for path in "$root"/server/*.c "$root"/server/*.h; do
    [ -e "$path" ] || continue
    [ "$(basename "$path")" = main.c ] && continue
    echo "layers: server/$(basename "$path") is in no layer's folder"
    bad=1
done
for dir in "$root"/server/*/; do
    folder="$(basename "$dir")"
    if [ -z "${rank[$folder]:-}" ]; then
        echo "layers: server/$folder/ is in no row of server/README.md"
        bad=1
        continue
    fi
    for path in "$dir"*.h; do if [ -e "$path" ]; then home[$(basename "$path")]=$folder; fi; done
done
for dir in "$root"/server/*/; do
    folder="$(basename "$dir")"
    [ -n "${rank[$folder]:-}" ] || continue
    for path in "$dir"*.c "$dir"*.h; do
        [ -e "$path" ] || continue
        while IFS= read -r inc; do
            to="${home[$inc]:-}"
            [ -n "$to" ] || continue # protocol/, engine/, generated: below every layer
            if [ "${rank[$to]}" -gt "${rank[$folder]}" ]; then
                echo "layers: server/$folder/$(basename "$path") includes $to/$inc: an arrow points up"
                bad=1
            fi
        done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$path")
    done
done
[ "$bad" -eq 0 ] && echo "layers: ${#rank[@]} folders, every include points down"
exit "$bad"
