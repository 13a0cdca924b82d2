#!/usr/bin/env bash
# calls.sh - server/'s layers hold in the linker's view: no object calls a function
# (or uses a variable) defined in a layer above its own. Arguments: the layers'
# static libraries, lowest first (tests/repo/CMakeLists.txt passes them in the
# order of server/CMakeLists.txt). Reads their symbol tables with nm.
set -euo pipefail
[ "$#" -ge 2 ] || { echo "usage: calls.sh LIB.a... (lowest layer first)"; exit 2; }
declare -A rank_of_lib owner
rank=0
for lib in "$@"; do
    rank_of_lib[$lib]=$rank
    # Defined, external symbols: text, data, bss, read-only data.
    while read -r sym; do owner[$sym]=$lib; done < <(nm -g --defined-only "$lib" 2>/dev/null |
        awk 'NF == 3 && $2 ~ /[TDBRC]/ {print $3}')
    rank=$((rank + 1))
done
up=0 edges=0
for lib in "$@"; do
    obj=""
    while read -r line; do
        case "$line" in
        *.o:) obj="${line%:}" ;;
        U\ *)
            sym="${line#U }"
            def="${owner[$sym]:-}"
            [ -n "$def" ] || continue # libc, libuv, protocol/, engine/...
            edges=$((edges + 1))
            if [ "${rank_of_lib[$def]}" -gt "${rank_of_lib[$lib]}" ]; then
                echo "calls: $(basename "$lib") $obj uses $sym of $(basename "$def"), a layer above"
                up=$((up + 1))
            fi
            ;;
        esac
    done < <(nm "$lib" 2>/dev/null | awk '/:$/ {print; next} $1 == "U" {print "U " $2}')
done
echo "calls: $# layers, $edges uses of server symbols across objects, $up pointing up"
[ "$up" -eq 0 ]
