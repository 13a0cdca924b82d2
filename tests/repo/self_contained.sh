#!/usr/bin/env bash
# self_contained.sh - no tracked file sends a reader outside the repository (the folder of
# shared notes beside it exists only on the development machine).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

# .ci/run may call CI-only tools kept beside the repository: it is not read by users.
allowed='^\.ci/run$'
pattern='\.\./shared'

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files)
else
    mapfile -t files < <(find . -path ./.git -prune -o -path './build*' -prune -o -type f -print |
        sed 's|^\./||')
fi

bad=0
for f in "${files[@]}"; do
    [[ $f =~ $allowed ]] && continue
    [ -f "$f" ] || continue
    if grep -n -I -- "$pattern" "$f" >/dev/null; then
        grep -n -I -- "$pattern" "$f" | sed "s|^|$f:|" >&2
        bad=1
    fi
done
if [ "$bad" -ne 0 ]; then
    echo "self_contained: the lines above point outside the repository; describe it here instead" >&2
    exit 1
fi
echo "self_contained: ${#files[@]} files, none points outside the repository"
