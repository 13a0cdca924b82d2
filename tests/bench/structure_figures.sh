#!/usr/bin/env bash
# structure_figures.sh - prints the structure figures of issue 26 for one source tree: lines of C per layer of server/, the longest functions, the largest files, asserts, growable byte buffers, and upward call edges (nm).
#
# Not a ctest: a measurement, to compare two trees (before and after a refactor). Usage:
#   tests/bench/structure_figures.sh [SOURCE_TREE [BUILD_DIR]]
# SOURCE_TREE defaults to this repository; BUILD_DIR (default SOURCE_TREE/build) is a
# build of that tree whose server objects (*.o under BUILD_DIR/server) nm reads for the
# call edges; without it those lines are skipped. Any build type will do.
#
# Layers: if server/ has one folder per layer, a file's layer is its folder, ranked by
# the `set(layers ...)` list of server/CMakeLists.txt (lowest first; server/main.c is the
# process, above them all). Otherwise (the tree before issue 26) they come from the
# "Files by layer" table of that tree's server/README.md (`| level | layer | files |`).
#
# Output, one figure a line as key=value pairs (values with spaces are quoted):
#   lines layer=L rank=R files=N c=N h=N total=N     (and one `lines layer=all ...`)
#   function rank=K name=F file=PATH lines=N         (the 15 longest in server/)
#   functions count=N median_lines=X mean_lines=X
#   file rank=K path=PATH lines=N                    (the 10 largest of server/)
#   asserts dir=D assert=N static_assert=N
#   buffer file=PATH function=F line=N               (a function growing a char buffer by realloc)
#   buffers count=N dirs="server protocol clients"
#   upcall user=PATH symbol=S defined_in=PATH from=L to=L
#   upcalls files=N symbols=N edges=N cross_file_uses=N
#   cycle a=PATH b=PATH                              (two files of one layer calling each other)
#   calls.sh: ...                                     (the repository's own check, if it has one)
# A function is a top-level brace block whose header (the text since the previous `;` or
# `}` at file level, comments, strings and preprocessor lines removed) ends in `)` and has
# no `=` outside parentheses; its lines run from the line of its name to its closing `}`.
set -euo pipefail
SRC=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${2:-$SRC/build}
exec python3 - "$SRC" "$BUILD" <<'PY'
import os, re, statistics, subprocess, sys

SRC, BUILD = (os.path.abspath(a) for a in sys.argv[1:3])
SERVER = os.path.join(SRC, "server")
if not os.path.isdir(SERVER):
    sys.exit(f"structure_figures: no {SERVER}")


def q(v):
    v = str(v)
    return f'"{v}"' if (" " in v or not v) else v


def out(kind, **kv):
    print(kind + "".join(f" {k}={q(v)}" for k, v in kv.items()), flush=True)


def c_files(top, exts=(".c", ".h")):
    """Every C file under top (repository-relative paths, sorted); build dirs skipped."""
    found = []
    for d, subdirs, files in os.walk(top):
        subdirs[:] = sorted(s for s in subdirs if not s.startswith(("build", ".")))
        found += [os.path.relpath(os.path.join(d, f), SRC) for f in files if f.endswith(exts)]
    return sorted(found)


def read(path):
    with open(os.path.join(SRC, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def strip_c(text):
    """The text with comments, string and char literals and preprocessor lines blanked
    (newlines kept, so line numbers hold)."""
    out_chars, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            out_chars.append(c); i += 1; continue
        if at_line_start and c == "#":  # a directive, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out_chars.append("\n"); i += 2; continue
                i += 1
            continue
        at_line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out_chars.append(re.sub(r"[^\n]", " ", text[i:j])); i = j; continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out_chars.append(c + " " * (min(j, n - 1) - i - 1) + c); i = j + 1; continue
        if c == "\n":
            at_line_start = True
        out_chars.append(c); i += 1
    return "".join(out_chars)


NAME_BEFORE_PAREN = re.compile(r"([A-Za-z_]\w*)\s*$")


def functions(path):
    """[(name, first_line, last_line)] of the function definitions of one file."""
    text = strip_c(read(path))
    found, depth, header_start, start_line, current = [], 0, 0, 0, None
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            if depth == 0:
                header = text[header_start:i]
                fn = function_header(header)
                if fn:
                    name, offset = fn
                    start_line = line - header[offset:].count("\n")
                    current = name
                else:
                    current = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if current:
                    found.append((current, start_line, line))
                header_start = i + 1
        elif c == ";" and depth == 0:
            header_start = i + 1
    return found


def function_header(header):
    """(name, offset of the name) if a file-level header is a function's, else None."""
    h = header.rstrip()
    if not h.endswith(")"):
        return None
    depth, first_paren = 0, -1
    for i, c in enumerate(h):
        if c == "(":
            if depth == 0 and first_paren < 0:
                first_paren = i
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "=" and depth == 0:
            return None
    if first_paren < 0:
        return None
    m = NAME_BEFORE_PAREN.search(h[:first_paren])
    if not m or m.group(1) in ("if", "while", "for", "switch", "return", "sizeof"):
        return None
    return m.group(1), m.start(1)


# --- layers -------------------------------------------------------------------------
def layer_folders():
    """{folder: rank} if server/ is in one folder per layer, else None."""
    dirs = sorted(d for d in os.listdir(SERVER)
                  if os.path.isdir(os.path.join(SERVER, d))
                  and any(f.endswith(".c") for f in os.listdir(os.path.join(SERVER, d))))
    if not dirs:
        return None
    order = []
    m = re.search(r"set\(\s*layers\s+([^)]*)\)", read("server/CMakeLists.txt"))
    if m:
        order = m.group(1).split()
    order += [d for d in dirs if d not in order]  # a folder the list lacks ranks last
    return {d: r for r, d in enumerate(order)}


FOLDERS = layer_folders()
TABLE = {}  # file name -> (rank, layer name), the before tree's README table
if FOLDERS is None:
    for row in read("server/README.md").splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*(.*)\|\s*$", row)
        if m:
            for f in re.findall(r"`([^`]+)`", m.group(3)):
                TABLE[f] = (int(m.group(1)), f"{m.group(1)} {m.group(2)}")


def layer_of(path):
    """(rank, layer name) of a file of server/ (repository-relative path)."""
    rel = os.path.relpath(path, "server")
    if FOLDERS is not None:
        folder = rel.split("/")[0] if "/" in rel else None
        if folder is None:  # main.c and anything else at the top: the process
            return (len(FOLDERS), "process (server/)")
        return (FOLDERS[folder], folder)
    return TABLE.get(rel, (99, "not in the README table"))


server_files = c_files(SERVER)
layout = "folders" if FOLDERS is not None else "server/README.md table"
out("tree", path=SRC, commit=subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"],
                                             capture_output=True, text=True).stdout.strip(),
    layers_from=layout)

# --- lines of C per layer ------------------------------------------------------------
per_layer, nlines = {}, {}
for f in server_files:
    nlines[f] = read(f).count("\n")
    rank, name = layer_of(f)
    e = per_layer.setdefault((rank, name), {"files": 0, "c": 0, "h": 0})
    e["files"] += 1
    e["c" if f.endswith(".c") else "h"] += nlines[f]
for (rank, name), e in sorted(per_layer.items()):
    out("lines", layer=name, rank=rank, files=e["files"], c=e["c"], h=e["h"], total=e["c"] + e["h"])
tot = {k: sum(e[k] for e in per_layer.values()) for k in ("files", "c", "h")}
out("lines", layer="all", rank="-", files=tot["files"], c=tot["c"], h=tot["h"], total=tot["c"] + tot["h"])

# --- functions ----------------------------------------------------------------------
fns = [(last - first + 1, name, f) for f in server_files for name, first, last in functions(f)]
fns.sort(key=lambda t: (-t[0], t[2], t[1]))
for k, (n, name, f) in enumerate(fns[:15], 1):
    out("function", rank=k, name=name, file=f, lines=n)
sizes = [n for n, _, _ in fns]
out("functions", count=len(sizes), median_lines=statistics.median(sizes),
    mean_lines=round(statistics.mean(sizes), 1), over_100=sum(n > 100 for n in sizes),
    over_50=sum(n > 50 for n in sizes))

# --- files --------------------------------------------------------------------------
for k, f in enumerate(sorted(server_files, key=lambda f: (-nlines[f], f))[:10], 1):
    out("file", rank=k, path=f, lines=nlines[f])
out("files", over_900=sum(n > 900 for n in nlines.values()),
    largest=max(nlines.values()))

# --- asserts ------------------------------------------------------------------------
for d in ("server", "protocol"):
    text = "".join(strip_c(read(f)) for f in c_files(os.path.join(SRC, d)))
    out("asserts", dir=d + "/", **{"assert": len(re.findall(r"(?<![\w])assert\s*\(", text))},
        static_assert=len(re.findall(r"(?<![\w])(?:_Static_assert|static_assert)\s*\(", text)))

# --- growable byte buffers ----------------------------------------------------------
# A function that reallocs a char (or uint8_t) pointer and grows its capacity
# geometrically (a doubling in its body): a hand-grown byte buffer.
BYTE_REALLOC = re.compile(r"\b(?:char|uint8_t|unsigned\s+char)\s*\*\s*\w+\s*=\s*realloc\s*\(")
DOUBLING = re.compile(r"\*\s*=?\s*2\b|\b2\s*\*|<<=?\s*1\b")
count = 0
for d in ("server", "protocol", "clients"):
    for f in c_files(os.path.join(SRC, d), (".c",)):
        raw = read(f)
        if "realloc" not in raw:
            continue
        lines, code = raw.split("\n"), strip_c(raw).split("\n")
        for name, first, last in functions(f):
            body = "\n".join(code[first - 1:last])
            hits = [first + i for i, l in enumerate(code[first - 1:last]) if BYTE_REALLOC.search(l)]
            if hits and DOUBLING.search(body):
                out("buffer", file=f, function=name, line=hits[0])
                count += 1
out("buffers", count=count, dirs="server protocol clients")

# --- calls between layers (nm) ------------------------------------------------------
objs = {}
if os.path.isdir(os.path.join(BUILD, "server")):
    for d, _, files in os.walk(os.path.join(BUILD, "server")):
        for o in files:
            if not o.endswith(".c.o"):
                continue
            rel = os.path.relpath(os.path.join(d, o), BUILD)
            src = re.sub(r"CMakeFiles/[^/]+\.dir/", "", rel)[:-2]
            if src in server_files and src not in objs:
                objs[src] = os.path.join(d, o)
if not objs:
    out("upcalls", skipped=f"no server objects under {BUILD}/server")
else:
    def nm(args, obj):
        r = subprocess.run(["nm"] + args + [obj], capture_output=True, text=True, check=True)
        return [l.split() for l in r.stdout.splitlines() if l.strip()]

    owner, uses = {}, {}
    for src, obj in sorted(objs.items()):
        for parts in nm(["-g", "--defined-only"], obj):
            if len(parts) == 3 and parts[1] in "TDBRCV":
                owner.setdefault(parts[2], src)
        uses[src] = sorted({p[-1] for p in nm(["-u"], obj)})
    up, cross, pairs = [], 0, set()
    for src in sorted(uses):
        for sym in uses[src]:
            dfn = owner.get(sym)
            if not dfn or dfn == src:
                continue
            cross += 1
            pairs.add((src, dfn))
            lu, ld = layer_of(src), layer_of(dfn)
            if ld[0] > lu[0]:
                up.append((src, sym, dfn, lu[1], ld[1]))
    for src, sym, dfn, lu, ld in up:
        out("upcall", user=src, symbol=sym, defined_in=dfn, **{"from": lu, "to": ld})
    out("upcalls", files=len({u[0] for u in up}), symbols=len({u[1] for u in up}),
        edges=len(up), cross_file_uses=cross, objects=len(objs))
    for a, b in sorted(pairs):
        if a < b and (b, a) in pairs and layer_of(a) == layer_of(b):
            out("cycle", a=a, b=b, layer=layer_of(a)[1])

# The repository's own check, when it has one and the build has the layers' libraries.
calls = os.path.join(SRC, "tests/repo/calls.sh")
if FOLDERS is not None and os.path.exists(calls):
    libs = [os.path.join(BUILD, "server", d, f"libserver_{d}.a")
            for d, _ in sorted(FOLDERS.items(), key=lambda kv: kv[1])]
    if all(os.path.exists(l) for l in libs):
        r = subprocess.run(["bash", calls] + libs, capture_output=True, text=True)
        for l in (r.stdout + r.stderr).splitlines():
            print(l if l.startswith("calls") else "calls.sh: " + l)
PY
