#!/usr/bin/env python3
# docs_true.py - the examples marked in the docs are what the real binaries print and send.
#
# A block is checked when an HTML comment `<!-- doc-check: KIND ARGS -->` stands on the line
# just before it (a ``` fenced block, a block indented by 4 spaces, or a table). Kinds:
#   usage PROG [SUB]   the block is the usage of `PROG [SUB] --help` (its first line without
#                      `usage: `, and the lines after it indented as far), verbatim
#   flags PROG         the block names exactly the flags `PROG --help` lists (a synopsis)
#   flag-table PROG    the table's first column names exactly the flags of `PROG --help`
#                      (but --help and --version)
#   transcript FLAGS   a JSON transcript (`A> ` sent by connection A, `AB< ` received by A and
#                      B): a real race2048d FLAGS (on port 0, no HTTP port, its journal in a
#                      temporary folder unless FLAGS name one) gets the same requests, and
#                      each line it sends must have the documented types and key sets, and
#                      the same values except
#                      ids, tokens, room codes, salts and commits, which must map one to one
#                      (a doc's room code in a request is sent as the server's, same case).
#                      After the last line every connection pings and must get its pong next,
#                      so a line the doc leaves out fails too. Without letters (`> `, `< `)
#                      the transcript is one connection's. FLAGS may hold `session=NAME`:
#                      the blocks of a file with the same NAME share one server (and the
#                      values mapped so far), so a later block can use a key an earlier got.
#                      `after=NAME` runs PRELUDES[NAME] first (the lines that make the state
#                      the block shows, e.g. a rated race that just ended). A doc line may
#                      elide: `[...]` stands for any list, a string ending in `...` for any
#                      string; the day's date (`daily`, `date`, `reveal_at`) maps one to one.
#   cmd FLAGS          `$ PROG ARGS` lines, each followed by what it prints, run against a real
#                      race2048d FLAGS (`--port N` in ARGS becomes its port; `ARGS &` runs in
#                      the background: the lines after it are its first, its others follow
#                      the last command's, and a `room=CODE` it prints maps the doc's CODE
#                      in later ARGS to the real one); `key=value`
#                      lines of a game on a server seed (different every run) are compared
#                      by their keys only
#   second-server FLAGS  the last line a second race2048d FLAGS prints on stderr (exit 1)
#                      while a first one runs (both in a temporary folder shown as /srv)
#   cluster-second FLAGS  the last line a second race2048d --cluster URL FLAGS prints on
#                      stderr (exit 1) while a first one with the same FLAGS runs, both on a
#                      nats-server of their own (the doc's URL stands for it)
#   metrics FLAGS      every series (`name{labels}`) the block shows is served by GET /metrics
#                      of a real race2048d FLAGS (values vary: not compared)
#   listening FLAGS    the lines a real race2048d FLAGS --port 0 --http-port 0 prints when it
#                      is ready, ports shown as the doc's; the doc's `[::1]` lines only where
#                      the name has an IPv6 address
#   python             a Python block: run, it prints its trailing `# ` comment lines
#   c-draws            a C block defining chacha20_block(key, counter, out): compiled with a
#                      main, it draws the page's vector (`the draws `0x...`, ...`) for the
#                      seed of 64 zeros
#   env-table          docker/README.md's variables: a row for each `[RACE2048_X]` of race2048d
#                      --help, its backticked default the image's (Dockerfile ENV) or --help's;
#                      a variable --help lacks is one a compose file next to the doc reads
#   folders-table      README.md's folders: the `name/` rows are exactly git's top-level
#                      folders; every row names something that exists
#   programs-table     clients/README.md's programs: a row for each program given (but
#                      race2048d) and each race2048-bench subcommand, each answering --help;
#                      the sources named exist
#   text-commands FLAGS  the text commands' table: each row's command is named by the screen
#                      `help` shows in the lobby (netcat's line mode)
#   routes-table FLAGS the HTTP routes' table, asked of a real race2048d FLAGS: each `GET /PATH`
#                      answers 200 (`limit=N` as 5; a path with `ID` 404 for a game there is
#                      not), `any other path` 404, `a method other than` 405 with `Allow`
#   game-fields FLAGS  the table of a finished game's fields names exactly the members of the
#                      `game` records a real race2048d FLAGS wrote while its preludes
#                      (`after=NAME`, a server each) ran
#   raw-http FLAGS     request lines (`...`: the rest of a WebSocket upgrade), a blank line, and
#                      the response a real race2048d FLAGS's game port sends (its head, and
#                      its body when it closes), `...` standing for any lines
#   nats-conf          a nats-server configuration that `nats-server -c FILE -t` accepts
#   haproxy-conf       an HAProxy configuration (or a part of one) in which haproxy -c finds
#                      no error
#   metric-table FLAGS the table of metrics: its rows (`name{label,...}` and a type) are
#                      exactly the families GET /metrics of a real race2048d FLAGS declares
#                      (# TYPE), with their types and label names
#   error-table FLAGS  a table of error codes: each row's is one the server counts
#                      (race2048_errors_total{code} of its /metrics)
#   nc FLAGS           `$ printf 'LINE\n...' | nc ...` then the lines it prints: the same
#                      as a transcript of one connection sending those lines
#   screens NAME FLAGS a text-mode screen: doc_screens.py's scenario NAME plays it with the
#                      real telnet and nc in 80x24 tmux panes against a real race2048d FLAGS
#                      (a fixed --seed: the same boards every run); the panes must be the
#                      block line for line, room and resume codes, seeds, salts and commits
#                      mapped one to one
#   sh                 `$ COMMAND` lines of a self-contained shell pipeline (the commitment's
#                      `printf '%s' 'SALT:SEED' | sha256sum`), each followed by its output: run
#                      by bash, verbatim
#   http FLAGS         `$ curl -i http://127.0.0.1:PORT/PATH` then the response, headers and
#                      body: the real curl against a real race2048d FLAGS's game port (the
#                      routes answer the same on both ports), verbatim but for the port
#   request-table FLAGS  the table of client messages: a real race2048d FLAGS knows exactly
#                      the types it has rows for (of those the doc names anywhere as
#                      `"type":"X"`), and reads no field a row does not name (each other field
#                      the doc names, sent with a value of the wrong kind, is not the one a
#                      bad_message complains of)
#   shape              single server lines (`{"type":...}`, one a line): each has exactly the
#                      top-level keys, in order, of a line of its type that a real race2048d
#                      sends in a scripted session (a race, a spectator, a queue, a solo
#                      game, a drop, an error, history, replay, a shutdown's bye), and no
#                      nested key such lines lack; values are not compared. In a message
#                      flow (`> ` and `< ` lines, `...` lines between), the `< ` lines are
#                      checked so (`"k":...` elides a value)
#   request REPLY FLAGS  requests (one a line): each, sent by a connection of its own to a real
#                      race2048d FLAGS after the preludes FLAGS name (`after=NAME`, run anew
#                      for each line; with `once`, once for the block, the lines then sent
#                      in order), is answered first by a line of type REPLY
#                      (`R1,R2,...`: one a line), never by an error
#   journal FLAGS      journal records (`{"j":...}`, one a line): a real race2048d FLAGS runs
#                      the preludes FLAGS name (`after=NAME`) and stops; each line is one of
#                      the records it wrote, keys in the same order, values the same but for
#                      salts and clock times (`"..."` elides a string). A line `...,"k":v}`
#                      shows a record's last members only
#   journal-table FLAGS  the table of journal records: each kind a real race2048d FLAGS wrote
#                      while one of the preludes (`after=NAME`, a server each) ran has a row
#                      naming (as `member`) every member of its records, in their order (a
#                      row that names none points to a block checked otherwise)
#   journal-cmd FLAGS  `$ race2048-replay FILE` lines, each followed by what it prints (stdout
#                      and stderr), verbatim: race2048.journal is the journal a real race2048d
#                      FLAGS wrote while its preludes (`after=NAME`) ran; another FILE is a
#                      copy with the score the block says is recorded (`game G (line L):
#                      player P: score S recorded`) written into game G's record
#   measured DATE HOW  a benchmark's figures on a machine: their values are not checked (they
#                      vary), but dated, with how they were made; `run=PROG,ARG,...` among HOW
#                      runs PROG ARGS: the same lines, the same keys in the same order, the
#                      same words and checksums (`verify`, `impl`), other values free. A block
#                      of `key=value` figures (`..._per_s=`) neither checked nor marked fails
#
# Besides the marked blocks, the prose's claims of the protocol version (README.md's "wire
# protocol (version N)", protocol/README.md's title and "the protocol version (N, this page)")
# are the `proto` a real race2048d's welcome says, and a page titled version N lists
# "Changes from version K" for every K below N, in its contents and as a heading.
#
# Usage: docs_true.py [--update] --bin NAME=PATH... FILE.md...
# --update (for maintainers) rewrites the usage, flags and transcript blocks from the
# binaries instead of comparing (flag tables are only reported: their prose is written by
# hand); a rewritten line keeps the doc's elisions (`[...]`, `"ab..."`) where the real line
# matches them. Exit 0 when every marked block is true, 1 with a diff-like report when not.
import argparse
import concurrent.futures
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import doc_screens

MARK = re.compile(r"^\s*<!--\s*doc-check:\s*(.*?)\s*-->\s*$")
DEADLINE_S = 20.0  # per transcript: generous for an ASan build on a busy machine


def find_block(lines, start):
    """Returns (first, end, kind, indent) of the block at or after lines[start] (blank lines
    skipped); end is exclusive and covers only the block's own content lines."""
    i = start
    while i < len(lines) and lines[i].strip() == "":
        i += 1
    if i >= len(lines):
        raise ValueError("marker at the end of the file")
    if lines[i].startswith("```"):
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        return i + 1, j, "fenced", ""
    if lines[i].startswith("|"):
        j = i
        while j < len(lines) and lines[j].startswith("|"):
            j += 1
        return i, j, "table", ""
    if lines[i].startswith("    "):
        j = i
        while j < len(lines) and (lines[j].startswith("    ") or (
                lines[j].strip() == "" and j + 1 < len(lines) and lines[j + 1].startswith("    "))):
            j += 1
        # A block in a list item is indented further: its common indentation is not its own.
        indent = min(len(l) - len(l.lstrip(" ")) for l in lines[i:j] if l.strip())
        return i, j, "indented", " " * indent
    raise ValueError("no block after the marker (line %d)" % (i + 1))


def run_help(bins, prog, sub):
    cmd = [bins[prog]] + ([sub] if sub else []) + ["--help"]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                         check=True, text=True).stdout
    return out.splitlines()


def usage_lines(bins, prog, sub):
    help_lines = run_help(bins, prog, sub)
    first = help_lines[0]
    assert first.startswith("usage: "), "%s --help does not begin with usage:" % prog
    got = [first[len("usage: "):]]
    for line in help_lines[1:]:
        if not line.startswith(" " * len("usage: ")):
            break  # the description is indented less, or after a blank line
        got.append(line[len("usage: "):])
    return got


def help_flags(bins, prog):
    flags = set()
    for line in run_help(bins, prog, None):
        m = re.match(r"^\s+(--[a-z][a-z0-9-]*)", line)
        if m:
            flags.add(m.group(1))
    return flags


def synopsis(prog, bins):
    """A wrapped synopsis of every flag of PROG's --help, with its argument."""
    items = ["[--help]", "[--version]"]
    for line in run_help(bins, prog, None):
        m = re.match(r"^\s+(--[a-z][a-z0-9-]*)(?: ([A-Z][A-Z,.\[\]]*))?\s", line)
        if m and m.group(1) not in ("--help", "--version"):
            arg = m.group(2).split("[")[0].rstrip(",") if m.group(2) else ""
            items.append("[%s%s]" % (m.group(1), " " + arg if arg else ""))
    out, line = [], prog
    for item in items:
        if len(line) + 1 + len(item) > 110 and line.strip():
            out.append(line)
            line = " " * len(prog)
        line += " " + item
    out.append(line)
    return out


# --- transcripts ---------------------------------------------------------------------

VARYING = {"id", "you", "winner", "token", "room", "salt", "commit", "key",
           "daily", "date", "reveal_at",  # the day the check runs
           "started", "ended"}  # a record's clock times
ELIDED_LIST = "[...]"  # `"results":[...]` in a doc line: any list
ID_KEYS = {"id", "you", "winner"}


class Mapping:
    """Doc value -> real value, one to one, per class (ids, tokens, rooms, salts, commits)."""

    def __init__(self):
        self.fwd, self.back = {}, {}

    def bind(self, cls, doc, real):
        key = (cls, doc)
        if key in self.fwd:
            return self.fwd[key] == real
        if (cls, real) in self.back:
            return False
        self.fwd[key], self.back[(cls, real)] = real, doc
        return True


def compare(doc, real, mapping, path, errors):
    if doc == ELIDED_LIST and isinstance(real, list):
        return  # the doc leaves the list out
    if isinstance(doc, str) and doc.endswith("...") and isinstance(real, str):
        return  # `"0c57..."`: a value the doc shortens (it varies, or is long)
    if isinstance(doc, dict) and isinstance(real, dict):
        if set(doc) != set(real):
            errors.append("%s: keys %s documented, %s sent" % (path, sorted(doc), sorted(real)))
            return
        for k in doc:
            if k in VARYING and not isinstance(doc[k], (dict, list)) and doc[k] is not None:
                cls = "id" if k in ID_KEYS else k
                if type(doc[k]) is not type(real[k]) or not mapping.bind(cls, doc[k], real[k]):
                    errors.append("%s.%s: %r documented, %r sent (not one to one)"
                                  % (path, k, doc[k], real[k]))
            else:
                compare(doc[k], real[k], mapping, "%s.%s" % (path, k), errors)
    elif isinstance(doc, list) and isinstance(real, list):
        if len(doc) != len(real):
            errors.append("%s: %d items documented, %d sent" % (path, len(doc), len(real)))
            return
        for i, (d, r) in enumerate(zip(doc, real)):
            compare(d, r, mapping, "%s[%d]" % (path, i), errors)
    elif type(doc) is not type(real) or doc != real:
        errors.append("%s: %s documented, %s sent" % (path, json.dumps(doc), json.dumps(real)))


def load_doc(text):
    """A documented JSON line; `[...]` (an elided list) becomes the string ELIDED_LIST."""
    return json.loads(text.replace(ELIDED_LIST, json.dumps(ELIDED_LIST)))


# Steps a transcript's marker can ask to run first (`after=NAME`), on connections of their
# own letters, in the doc's format: a `<` line checks only the keys it shows (values bind the
# codes and keys the doc's block then uses). They make the state a block shows (a rated
# race that just ended) without the doc having to show every line of it.
PRELUDES = {
    # Alice (logged in with the key the session's register got) makes a rated race, Bob
    # (A, a new account) joins it, Alice leaves: Bob wins by forfeit. A's `end` is the doc's.
    "rated-forfeit": [
        'B> {"type":"hello","name":"alice","key":"7683319804c302f6e8c65b1ba6c92a34"}',
        'B< {"type":"welcome","account":true}',
        'A> {"type":"hello","name":"Bob"}',
        'A< {"type":"welcome"}',
        'A> {"type":"register"}',
        'A< {"type":"registered","name":"Bob"}',
        'B> {"type":"create","players":2,"rated":true}',
        'B< {"type":"room","room":"LQC4G"}',
        'A> {"type":"join","room":"LQC4G"}',
        'A< {"type":"room"}', 'A< {"type":"start","rated":true}',
        'B< {"type":"room"}', 'B< {"type":"start","rated":true}',
        'B> {"type":"leave"}',
        'B< {"type":"end","reason":"forfeit"}', 'B< {"type":"left"}',
        'A< {"type":"player","status":"left"}',
    ],
    # ann's 3x3 solo game on client seed 7: left, up, right, then leave.
    "solo-lur": [
        'A> {"type":"hello","name":"ann"}', 'A< {"type":"welcome"}',
        'A> {"type":"solo","size":3,"seed":7}', 'A< {"type":"start"}',
        'A> {"type":"move","dir":"left"}', 'A< {"type":"state","moves":1}',
        'A> {"type":"move","dir":"up"}', 'A< {"type":"state","moves":2}',
        'A> {"type":"move","dir":"right"}', 'A< {"type":"state","moves":3}',
        'A> {"type":"leave"}', 'A< {"type":"end"}', 'A< {"type":"left"}',
    ],
    # A says hello (a connection's first line is welcome otherwise).
    "hello": ['A> {"type":"hello","name":"carl"}', 'A< {"type":"welcome"}'],
    # Two new accounts race rated; Alice (A) leaves: Bob (B) wins by forfeit.
    "rated-accounts": [
        'A> {"type":"hello","name":"Alice"}', 'A< {"type":"welcome"}',
        'A> {"type":"register"}', 'A< {"type":"registered","name":"Alice"}',
        'B> {"type":"hello","name":"Bob"}', 'B< {"type":"welcome"}',
        'B> {"type":"register"}', 'B< {"type":"registered","name":"Bob"}',
        'A> {"type":"create","players":2,"rated":true}', 'A< {"type":"room","room":"R1"}',
        'B> {"type":"join","room":"R1"}', 'B< {"type":"room"}', 'B< {"type":"start","rated":true}',
        'A< {"type":"room"}', 'A< {"type":"start","rated":true}',
        'A> {"type":"leave"}', 'A< {"type":"end","reason":"forfeit"}', 'A< {"type":"left"}',
        'B< {"type":"player","status":"left"}',
    ],
    # B waits in a 2-player room (K7QD), A has said hello.
    "room-k7qd": ['B> {"type":"hello","name":"bea"}', 'B< {"type":"welcome"}',
                  'B> {"type":"create","players":2}', 'B< {"type":"room","room":"K7QD"}',
                  'A> {"type":"hello","name":"ann"}', 'A< {"type":"welcome"}'],
    # A plays a solo game.
    "solo": ['A> {"type":"hello","name":"ann"}', 'A< {"type":"welcome"}',
             'A> {"type":"solo"}', 'A< {"type":"start"}'],
    # B (its resume token shown as the doc's) plays a solo game; A is a new connection.
    "seated": ['B> {"type":"hello","name":"bea"}',
               'B< {"type":"welcome","token":"4be1c07e9d2a5f3386e0b7c1d94a2f65"}',
               'B> {"type":"solo"}', 'B< {"type":"start"}'],
    # B left a 2-player race: A won it by forfeit.
    "race-won": ['A> {"type":"hello","name":"ann"}', 'A< {"type":"welcome"}',
                 'B> {"type":"hello","name":"bea"}', 'B< {"type":"welcome"}',
                 'A> {"type":"create","players":2}', 'A< {"type":"room","room":"R1"}',
                 'B> {"type":"join","room":"R1"}', 'B< {"type":"room"}', 'B< {"type":"start"}',
                 'A< {"type":"room"}', 'A< {"type":"start"}',
                 'B> {"type":"leave"}', 'B< {"type":"end"}', 'B< {"type":"left"}',
                 'A< {"type":"player","status":"left"}', 'A< {"type":"end","reason":"forfeit"}'],
    # A has played 17 solo games (game 17 is the last), its requests sent at once.
    "17-games": ['A> {"type":"hello","name":"ann"}', 'A< {"type":"welcome"}'] + [
        line for seed in range(1, 18) for line in (
            'A> {"type":"solo","size":3,"seed":%d}' % seed, 'A> {"type":"move","dir":"left"}',
            'A> {"type":"move","dir":"right"}', 'A> {"type":"leave"}')] + [
        line for seed in range(1, 18) for line in (
            'A< {"type":"start"}', 'A< {"type":"state"}', 'A< {"type":"state"}',
            'A< {"type":"end"}', 'A< {"type":"left"}')],
    # Rated races won by forfeit (the loser leaves), so that three accounts are past their
    # provisional races: Alice beats Carl and dave 6 times each, Carl and dave beat each
    # other twice. A (eve) asks.
    "ladder": [line for who, name in (("L", "Alice"), ("C", "Carl"), ("D", "dave")) for line in (
        '%s> {"type":"hello","name":"%s"}' % (who, name), '%s< {"type":"welcome"}' % who,
        '%s> {"type":"register"}' % who, '%s< {"type":"registered"}' % who)] + [
        line for n, (w, l) in enumerate([("L", "C"), ("L", "D")] * 6 + [("C", "D"), ("D", "C")] * 2)
        for line in (
            '%s> {"type":"create","players":2,"rated":true}' % w,
            '%s< {"type":"room","room":"L%d"}' % (w, n),
            '%s> {"type":"join","room":"L%d"}' % (l, n), '%s< {"type":"room"}' % l,
            '%s< {"type":"start"}' % l, '%s< {"type":"room"}' % w, '%s< {"type":"start"}' % w,
            '%s> {"type":"leave"}' % l, '%s< {"type":"end"}' % l, '%s< {"type":"left"}' % l,
            '%s< {"type":"player"}' % w, '%s< {"type":"end"}' % w)] + [
        'A> {"type":"hello","name":"eve"}', 'A< {"type":"welcome"}'],
    # A logs in as Alice.
    "alice": ['A> {"type":"hello","name":"alice","key":"7683319804c302f6e8c65b1ba6c92a34"}',
              'A< {"type":"welcome","account":true}'],
}


def run_prelude(name, conns, port, mapping, deadline, errors):
    for line in PRELUDES[name]:
        who, way, text = re.match(r"^([A-Z])([<>]) (.*)$", line).groups()
        if who not in conns:
            conns[who] = Conn(port)
        doc = json.loads(text)
        if way == ">":
            conns[who].send(json.dumps(to_real(doc, mapping), separators=(",", ":")))
            continue
        got = json.loads(conns[who].read_line(deadline))
        shown = {k: got.get(k) for k in doc}
        before = len(errors)
        compare(doc, shown, mapping, "%s (%s, before the block) %s" % (name, who, doc["type"]),
                errors)
        if len(errors) > before:
            errors.append("  sent: %s" % json.dumps(got))


def to_real(value, mapping):
    """A documented request with its room codes and ids mapped to the server's."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "room" and isinstance(v, str) and ("room", v.upper()) in mapping.fwd:
                real = mapping.fwd[("room", v.upper())]
                out[k] = real.lower() if v.islower() else real
            elif k in ("key", "token") and (k, v) in mapping.fwd:
                out[k] = mapping.fwd[(k, v)]
            elif k in ID_KEYS and ("id", v) in mapping.fwd:
                out[k] = mapping.fwd[("id", v)]
            else:
                out[k] = to_real(v, mapping)
        return out
    if isinstance(value, list):
        return [to_real(v, mapping) for v in value]
    return value


def keep_elisions(doc, real):
    """real, with the doc's `[...]` and `"...` strings kept where real matches them, so that
    --update rewrites a line without spelling out what the doc leaves out."""
    if doc == ELIDED_LIST and isinstance(real, list):
        return doc
    if isinstance(doc, str) and doc.endswith("...") and isinstance(real, str):
        return doc
    if isinstance(doc, dict) and isinstance(real, dict):
        return {k: keep_elisions(doc[k], v) if k in doc else v for k, v in real.items()}
    if isinstance(doc, list) and isinstance(real, list) and len(doc) == len(real):
        return [keep_elisions(d, r) for d, r in zip(doc, real)]
    return real


def as_doc(value, mapping):
    """A server line with the ids, tokens, codes, salts and commits the doc already shows for
    them, so that --update changes only what changed."""
    def label(cls, x):
        """The doc's label of a real value; one of its own if the doc does not show it yet
        (bound, so that the rewritten block maps one to one on the next run)."""
        if (cls, x) in mapping.back:
            return mapping.back[(cls, x)]
        if isinstance(x, str) and x.endswith("..."):
            return x  # the doc's elision, kept
        doc = x
        if (cls, doc) in mapping.fwd:  # the doc uses that label for another value
            taken = [d for (c, d) in mapping.fwd if c == cls and isinstance(d, int)]
            doc = max(taken) + 1 if isinstance(x, int) and taken else "%s-%d" % (x, len(mapping.fwd))
        mapping.bind(cls, doc, x)
        return doc

    def back(v):
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                cls = "id" if k in ID_KEYS else k
                out[k] = label(cls, x) if k in VARYING and x is not None and not isinstance(
                    x, (dict, list)) else back(x)
            return out
        return [back(x) for x in v] if isinstance(v, list) else v
    return json.dumps(back(value), separators=(",", ":"), ensure_ascii=False).replace(
        json.dumps(ELIDED_LIST), ELIDED_LIST)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
        self.buf = b""

    def send(self, obj_text):
        self.sock.sendall(obj_text.encode() + b"\n")

    def read_line(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise TimeoutError("no line from the server before the deadline")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


def start_server(bins, flags, tmp):
    """race2048d with the marker's FLAGS (the doc's own command) on a free loopback port."""
    if "--journal" not in flags:
        flags = flags + ["--journal", os.path.join(tmp, "journal")]
    proc = subprocess.Popen(
        [bins["race2048d"], "--host", "127.0.0.1", "--port", "0", "--http-port", "off",
         "--log-level", "warn"] + flags,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    # Its first line says it is ready; its exit ends the wait too, and so does the deadline.
    ready = select.select([proc.stdout], [], [], DEADLINE_S)[0]
    line = proc.stdout.readline() if ready else ""
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    if not m:
        proc.kill()
        raise RuntimeError("race2048d did not start: %r" % line)
    return proc, int(m.group(1))


class Server:
    """A race2048d for one transcript, or for the blocks of one session=NAME."""

    def __init__(self, bins, flags):
        self.tmp = tempfile.TemporaryDirectory()
        self.proc, self.port = start_server(bins, flags, self.tmp.name)
        self.mapping = Mapping()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.tmp.cleanup()


def run_transcript(bins, flags, block, sessions=None):
    """Returns (errors, regenerated block lines). With `session=NAME` among the flags the
    server (and what its values map to) is the one of the file's earlier blocks of NAME."""
    errors, out = [], []
    names = [f[len("session="):] for f in flags if f.startswith("session=")]
    preludes = [f[len("after="):] for f in flags if f.startswith("after=")]
    flags = [f for f in flags if not f.startswith(("session=", "after="))]
    if names and names[0] in sessions:
        server = sessions[names[0]]
    else:
        server = Server(bins, flags)
        if names:
            sessions[names[0]] = server
    mapping, port = server.mapping, server.port
    conns = {}
    try:
        deadline = time.monotonic() + DEADLINE_S
        for name in preludes:
            run_prelude(name, conns, port, mapping, deadline, errors)
        for n, line in enumerate(block):
            m = re.match(r"^([A-Z]*)([<>]) (.*)$", line)
            if not m:
                errors.append("line %d: not a transcript line: %s" % (n + 1, line))
                out.append(line)
                continue
            who, way, text = m.groups()
            shown = who  # "" for a one-connection transcript written `> ` and `< `
            who = who or "A"
            doc = load_doc(text)
            if way == ">":
                assert len(who) == 1, "a request is sent by one connection"
                if who not in conns:
                    conns[who] = Conn(port)
                real = to_real(doc, mapping)
                sent = text if real == doc else json.dumps(real, separators=(",", ":"))
                conns[who].send(sent)
                out.append("%s> %s" % (shown, text))
                continue
            reals = []
            for c in who:
                got = conns[c].read_line(deadline)
                before = len(errors)
                compare(doc, json.loads(got), mapping, "line %d (%s<) %s" % (n + 1, c, doc.get("type")), errors)
                shown_got = as_doc(keep_elisions(doc, json.loads(got)), mapping)  # after compare
                reals.append(text if len(errors) == before else shown_got)
                if len(errors) > before:
                    errors.append("  documented: %s\n  sent:       %s" % (text, got))
            if len(set(reals)) == 1:
                out.append("%s< %s" % (shown, reals[0]))
            else:
                out.extend("%s< %s" % (c, r) for c, r in zip(who, reals))
        for c, conn in conns.items():
            conn.send('{"type":"ping","t":1}')
            got = json.loads(conn.read_line(deadline))
            if got.get("type") != "pong":
                errors.append("connection %s: the server sent a line the doc leaves out: %s"
                              % (c, json.dumps(got)))
    except (TimeoutError, ConnectionError, OSError) as e:
        errors.append("transcript stopped: %s" % e)
        out = None  # nothing to rewrite a block with
    finally:
        for conn in conns.values():
            conn.sock.close()
        if not names:
            server.stop()
    return errors, out


# --- commands ------------------------------------------------------------------------

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def same_result_line(doc, real):
    """Two `key=value ...` lines agree: the same keys; the same values, except that a game on
    a server seed (64 hex digits, different every run) is compared by its keys only."""
    d = dict(t.split("=", 1) for t in doc.split() if "=" in t)
    r = dict(t.split("=", 1) for t in real.split() if "=" in t)
    if list(d) != list(r) or not d:
        return doc == real
    if HEX64.match(d.get("seed", "")) or d.get("room"):
        return bool(HEX64.match(r.get("seed", ""))) or bool(r.get("room"))
    return d == r


def run_commands(bins, flags, block):
    """Each `$ PROG ARGS` line runs against a real race2048d FLAGS (`--port N` becomes its
    port); the lines after it are its stdout. A line ending in ` &` is a background job: the
    lines after it are its first ones (a `room=CODE` among them makes the doc's CODE, in a
    later command, the real one), and its other lines follow the block's last command's.
    Returns (errors, regenerated block)."""
    errors, out, jobs, codes = [], [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_server(bins, flags, tmp)
        try:
            i = 0
            while i < len(block):
                line = block[i]
                assert line.startswith("$ "), "a command block begins with `$ `: %s" % line
                j = i + 1
                while j < len(block) and not block[j].startswith("$ "):
                    j += 1
                argv = line[2:].split()
                background = argv[-1] == "&"
                argv = argv[:-1] if background else argv
                real_argv = [bins[argv[0]]] + [
                    str(port) if argv[k - 1] == "--port" else codes.get(a, a)
                    for k, a in enumerate(argv) if k > 0]
                doc = block[i + 1:j]
                if background:
                    job = subprocess.Popen(real_argv, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, text=True)
                    jobs.append(job)
                    got = []
                    while len(got) < len(doc):
                        if not select.select([job.stdout], [], [], DEADLINE_S)[0]:
                            break
                        got_line = job.stdout.readline()
                        if not got_line:
                            break
                        got.append(got_line.rstrip("\n"))
                    for d, r in zip(doc, got):
                        if d.startswith("room=") and r.startswith("room="):
                            codes[d[len("room="):]] = r[len("room="):]
                else:
                    got = subprocess.run(real_argv, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True,
                                         timeout=120).stdout.splitlines()
                if j == len(block):  # the jobs' last lines follow the last command's
                    for job in jobs:
                        try:
                            rest, _ = job.communicate(timeout=DEADLINE_S)
                        except subprocess.TimeoutExpired:
                            rest = "(still running after %d s)" % DEADLINE_S
                        got += rest.splitlines()
                if len(doc) != len(got) or not all(same_result_line(d, r) for d, r in zip(doc, got)):
                    errors.append("`%s` documented:\n    %s\n  printed:\n    %s"
                                  % (line[2:], "\n    ".join(doc), "\n    ".join(got)))
                out += [line] + got
                i = j
        finally:
            for job in jobs:
                job.kill()
                job.wait()
            proc.terminate()
            proc.wait(timeout=DEADLINE_S)
    return errors, out


def second_server(bins, flags, block):
    """What a second race2048d FLAGS prints on stderr while a first one holds its journal
    (both run in a temporary folder shown as /srv; the doc's line is the last one)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = os.path.realpath(tmp)
        argv = [bins["race2048d"], "--host", "127.0.0.1", "--port", "0", "--http-port", "off"] + flags
        first = subprocess.Popen(argv, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            if not select.select([first.stdout], [], [], DEADLINE_S)[0] or not first.stdout.readline():
                return ["the first race2048d did not start"], None
            second = subprocess.run(argv, cwd=tmp, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            first.terminate()
            first.wait(timeout=DEADLINE_S)
    lines = second.stderr.replace(tmp, "/srv").splitlines()
    want = lines[-1:]
    if second.returncode != 1:
        return ["the second race2048d exited %d, not 1" % second.returncode], want
    if want != block:
        return ["documented:\n    %s\n  printed:\n    %s" % ("\n    ".join(block), "\n    ".join(want))], want
    return [], want


def check_requests(bins, args, block):
    """Each line is a request a real race2048d FLAGS takes: sent on connection A after the
    preludes (`after=NAME`, run anew for each line, or, with `once`, once for the block), its
    first answer is of the type REPLY (`REPLY1,REPLY2,...`: one a line), never an error."""
    replies = args[0].split(",")
    once = "once" in args[1:]
    preludes = [f[len("after="):] for f in args[1:] if f.startswith("after=")]
    server = Server(bins, [f for f in args[1:] if not f.startswith("after=") and f != "once"])
    errors, conns, mapping = [], {}, Mapping()
    try:
        for n, line in enumerate(block):
            want = replies[n] if len(replies) > 1 else replies[0]
            try:
                deadline = time.monotonic() + DEADLINE_S
                if not once or n == 0:
                    for conn in conns.values():
                        conn.sock.close()
                    conns, mapping = {}, Mapping()
                    for name in preludes:
                        run_prelude(name, conns, server.port, mapping, deadline, errors)
                if "A" not in conns:
                    conns["A"] = Conn(server.port)
                conn = conns["A"]
                conn.send(json.dumps(to_real(load_doc(line), mapping), separators=(",", ":")))
                conn.send('{"type":"ping","t":"sync"}')
                got = json.loads(conn.read_line(deadline))
                if got.get("type") != want:
                    errors.append("`%s` is answered %s, not %s" % (line, json.dumps(got), want))
                while got.get("t") != "sync":  # the rest of its answers
                    got = json.loads(conn.read_line(deadline))
            except (TimeoutError, ConnectionError, OSError, ValueError) as e:
                errors.append("`%s`: %s" % (line, e))
    finally:
        for conn in conns.values():
            conn.sock.close()
        server.stop()
    return errors


def journal_records(bins, flags):
    """The records a real race2048d FLAGS writes to its journal while the preludes named
    `after=NAME` among FLAGS run, then a stop (SIGTERM: every record is on disk)."""
    preludes = [f[len("after="):] for f in flags if f.startswith("after=")]
    server = Server(bins, [f for f in flags if not f.startswith("after=")])
    errors, conns = [], {}
    try:
        deadline = time.monotonic() + DEADLINE_S
        for name in preludes:
            run_prelude(name, conns, server.port, server.mapping, deadline, errors)
        for conn in conns.values():  # every request answered before the stop
            conn.send('{"type":"ping","t":"sync"}')
            while json.loads(conn.read_line(deadline)).get("t") != "sync":
                pass
        server.proc.terminate()
        server.proc.wait(timeout=DEADLINE_S)
        with open(os.path.join(server.tmp.name, "journal"), encoding="utf-8") as f:
            records = [(json.loads(l), l.rstrip("\n")) for l in f if l.strip()]
    finally:
        for conn in conns.values():
            conn.sock.close()
        server.stop()
    return errors, records


def check_journal(bins, flags, block):
    """Each line is a record the real server wrote in the preludes' session: the same keys in
    the same order and the same values but for salts, clock times and `"..."` elisions. A
    line `...,"k":v,...}` shows a record's last members only."""
    errors, records = journal_records(bins, flags)
    out = []
    for line in block:
        tail = line.startswith("...,")
        doc = load_doc("{" + line[4:] if tail else line)
        if tail:
            cands = [({k: r[k] for k in list(r)[len(r) - len(doc):]}, raw) for r, raw in records
                     if len(r) >= len(doc) and list(r)[len(r) - len(doc):] == list(doc)]
        else:
            cands = [(r, raw) for r, raw in records
                     if r.get("j") == doc.get("j") and list(r) == list(doc)]
        best = None
        for real, raw in cands:
            errs = []
            compare(doc, real, Mapping(), "record", errs)
            if not errs:
                best = None
                out.append(line)
                break
            best = best or (real, raw, errs)
        else:
            if best is None:
                kind = doc.get("j", "with members " + ",".join(doc))
                same = [list(r) for r, _ in records if r.get("j") == doc.get("j")] or \
                    [list(r) for r, _ in records]
                errors.append("no record %s with the keys %s; the server wrote %s"
                              % (kind, list(doc), same[:3]))
                out.append(line)
            else:
                real, raw, errs = best
                errors += errs
                # The server's own spelling (17 significant digits), the doc's elisions kept.
                for k, v in doc.items():
                    if isinstance(v, str) and v.endswith("...") and isinstance(real[k], str):
                        raw = raw.replace('"%s":%s' % (k, json.dumps(real[k])),
                                          '"%s":%s' % (k, json.dumps(v)), 1)
                if tail:
                    raw = "...," + raw[raw.index(',"%s":' % next(iter(doc))) + 1:]
                out.append(raw)
    return errors, out


TAMPER = re.compile(r"^game (\d+) \(line \d+\): player (\d+): score (\d+) recorded")


def run_journal_commands(bins, flags, block):
    """`$ race2048-replay FILE ARGS` lines, each followed by what it prints, where FILE is the
    journal a real race2048d FLAGS wrote while the preludes FLAGS name ran (`race2048.journal`),
    or a copy of it (any other name) with the score the block says is recorded for a game's
    player (`game G (line L): player P: score S recorded`) written into G's record."""
    errors, records = journal_records(bins, flags)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        i = 0
        while i < len(block):
            line = block[i]
            if not line.startswith("$ race2048-replay "):
                return errors + ["a block of `$ race2048-replay FILE` lines: %s" % line], None
            j = i + 1
            while j < len(block) and not block[j].startswith("$ "):
                j += 1
            argv = line[2:].split()
            doc = block[i + 1:j]
            raws = [raw for _, raw in records]
            tamper = [TAMPER.match(l) for l in doc if TAMPER.match(l)]
            if argv[1] != "race2048.journal" and tamper:
                game, player, score = (int(x) for x in tamper[0].groups())
                for k, (rec, _) in enumerate(records):
                    if rec.get("j") == "game" and rec.get("game") == game:
                        for res in rec["results"]:
                            if res["id"] == player:
                                res["score"] = score
                        raws[k] = json.dumps(rec, separators=(",", ":"), ensure_ascii=False)
            with open(os.path.join(tmp, argv[1]), "w", encoding="utf-8") as f:
                f.write("\n".join(raws) + "\n")
            got = subprocess.run([bins[argv[0]]] + argv[1:], cwd=tmp, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, timeout=60).stdout.splitlines()
            if got != doc:
                errors.append("`%s` documented:\n    %s\n  printed:\n    %s"
                              % (line[2:], "\n    ".join(doc), "\n    ".join(got)))
            out += [line] + got
            i = j
    return errors, out


def cluster_second(bins, flags, block):
    """The last line a second race2048d --cluster URL FLAGS prints on stderr (exit 1) while a
    first one with the same FLAGS (the same --node) runs: both on a nats-server of their own
    (with JetStream, on a free port), each in its own folder; the doc's URL stands for it."""
    url = re.search(r"--cluster (\S+):", block[0] if block else "")
    if not url:
        return ["the line does not begin `race2048d: --cluster URL:`"], None
    with tempfile.TemporaryDirectory() as tmp:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        nats_port = probe.getsockname()[1]
        probe.close()
        nats = subprocess.Popen(["nats-server", "-js", "-sd", os.path.join(tmp, "nats"), "-a",
                                 "127.0.0.1", "-p", str(nats_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        real_url = "nats://127.0.0.1:%d" % nats_port
        argv = [bins["race2048d"], "--host", "127.0.0.1", "--port", "0", "--http-port", "off",
                "--cluster", real_url] + flags
        first = None
        try:
            deadline = time.monotonic() + DEADLINE_S
            while True:  # nats-server listens when a connection to it succeeds
                try:
                    socket.create_connection(("127.0.0.1", nats_port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or nats.poll() is not None:
                        return ["nats-server did not start"], None
                    time.sleep(0.05)
            for name in ("first", "second"):
                os.mkdir(os.path.join(tmp, name))
            first = subprocess.Popen(argv, cwd=os.path.join(tmp, "first"), stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
            if not select.select([first.stdout], [], [], DEADLINE_S)[0] or not first.stdout.readline():
                return ["the first race2048d did not start"], None
            second = subprocess.run(argv, cwd=os.path.join(tmp, "second"), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            for proc in (first, nats):  # the node first: it leaves the cluster on NATS
                if proc is not None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=DEADLINE_S)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
    want = second.stderr.replace(real_url, url.group(1)).splitlines()[-1:]
    if second.returncode != 1:
        return ["the second race2048d exited %d, not 1" % second.returncode], want
    if want != block:
        return ["documented:\n    %s\n  printed:\n    %s" % ("\n    ".join(block), "\n    ".join(want))], want
    return [], want


def check_journal_table(bins, flags, block):
    """The table of journal records: each kind of record a real race2048d wrote while one of
    the preludes FLAGS name (`after=NAME`, each on a server of its own) ran has a row, and
    the row names (as `member`) every member of such records, in their order."""
    errors, rows = [], {}
    for line in block[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.match(r"^`([a-z_]+)`$", cells[0])
        if m:
            rows[m.group(1)] = re.findall(r"`([a-z_]+)`", cells[-1])
    preludes = [f for f in flags if f.startswith("after=")]
    others = [f for f in flags if not f.startswith("after=")]
    seen = set()
    for prelude in preludes:
        errs, records = journal_records(bins, others + [prelude])
        errors += errs
        for rec, _ in records:
            kind, keys = rec.get("j"), [k for k in rec if k != "j"]
            if (kind, tuple(keys)) in seen:
                continue
            seen.add((kind, tuple(keys)))
            if kind not in rows:
                errors.append("the server writes `%s` records; the table has no row" % kind)
                continue
            named = rows[kind]
            if not named:
                continue  # the row points to a block below (`game`: checked as `journal`)
            missing = [k for k in keys if k not in named]
            if missing:
                errors.append("`%s` records have %s; its row does not name them"
                              % (kind, ", ".join(missing)))
            elif sorted(keys, key=named.index) != keys:
                errors.append("`%s` records have %s in that order; its row names %s"
                              % (kind, keys, named))
    return errors


def get_metrics(bins, flags):
    """The body of GET /metrics on a real race2048d FLAGS's game port."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_server(bins, flags, tmp)
        try:
            conn = Conn(port)
            conn.sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            deadline, body = time.monotonic() + DEADLINE_S, b""
            while time.monotonic() < deadline:
                if not select.select([conn.sock], [], [], deadline - time.monotonic())[0]:
                    break
                chunk = conn.sock.recv(65536)
                if not chunk:
                    break
                body += chunk
            conn.sock.close()
        finally:
            proc.terminate()
            proc.wait(timeout=DEADLINE_S)
    return body.decode(errors="replace").split("\r\n\r\n", 1)[-1]


def metric_series(bins, flags, block):
    """Every series the block shows (`name{labels}`; values vary, `...` stands for the rest)
    is one that GET /metrics on a real race2048d's game port lists."""
    text = get_metrics(bins, flags)
    real = {l.split()[0] for l in text.split("\r\n\r\n", 1)[-1].splitlines()
            if l and not l.startswith("#")}
    shown = {l.split()[0] for l in block if l and not l.startswith("$") and l.strip() != "..."}
    missing = sorted(shown - real)
    if not real:
        return ["GET /metrics gave no series: %r" % text[:200]]
    return ["series shown but not served: %s" % ", ".join(missing)] if missing else []


def listening_lines(bins, flags, block):
    """What a real race2048d FLAGS (with `--port 0 --http-port 0`) prints on stdout when it is
    ready, its ports shown as the doc's (the first `:PORT` of a `listening` line and of an
    `http` line). A machine where the name has no IPv6 address prints no `[::1]` lines:
    those of the doc are then not asked for."""
    doc_port = re.search(r"listening on .*:(\d+)$", block[0]) if block else None
    doc_http = [re.search(r":(\d+)$", l).group(1) for l in block if " http on " in l][:1]
    if not doc_port:
        return ["the block does not begin with a `race2048d listening on` line"], None
    proc = subprocess.Popen([bins["race2048d"], "--port", "0", "--http-port", "0",
                             "--journal", "none"] + flags,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    buf = b""
    try:  # it flushes them together: the lines are in when the first http line is
        deadline = time.monotonic() + DEADLINE_S
        while b" http on " not in buf and select.select(
                [proc.stdout], [], [], max(0, deadline - time.monotonic()))[0]:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE_S)
    got = buf.decode().splitlines()
    ports = {}
    for l in got:
        m = re.search(r"^race2048d (listening|http) on .*:(\d+)$", l)
        if m:
            ports.setdefault(m.group(2), doc_port.group(1) if m.group(1) == "listening"
                             else (doc_http[0] if doc_http else m.group(2)))
    shown = [re.sub(r":(\d+)$", lambda m: ":" + ports.get(m.group(1), m.group(1)), l) for l in got]
    if len(set(ports.values())) != len(ports):
        return ["the doc shows one port for the server's %s" % " and ".join(sorted(ports))], None
    want = block if any("[::1]" in l for l in shown) else [l for l in block if "[::1]" not in l]
    if shown != want:
        return ["documented:\n    %s\n  printed (ports as the doc's):\n    %s"
                % ("\n    ".join(want), "\n    ".join(shown))], None
    return [], None


def run_python(block):
    """A Python block run by this Python: it prints its trailing `# ` comment lines."""
    k = len(block)
    while k > 0 and block[k - 1].startswith("# "):
        k -= 1
    want = [l[2:] for l in block[k:]]
    got = subprocess.run([sys.executable, "-c", "\n".join(block[:k])], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60).stdout.splitlines()
    if not want or got != want:
        return ["the block's comment says it prints:\n    %s\n  it prints:\n    %s"
                % ("\n    ".join(want), "\n    ".join(got))]
    return []


def run_c_draws(block, text):
    """A C block defining chacha20_block(key, counter, out): compiled with a main that prints
    the first draws of the seed of 64 zeros, which must be the page's vector (`the draws
    `0x...`, ...`)."""
    vector = re.findall(r"`(0x[0-9a-f]{8})`", text[text.find("the draws `0x"):][:200])
    cc = next((c for c in (os.environ.get("CC"), "cc", "clang", "gcc") if c and shutil.which(c)), None)
    if not vector or not cc:
        return ["no vector (`the draws `0x...``) on the page, or no C compiler"]
    main = ("#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n" + "\n".join(block) +
            "\nint main(void) {\n    uint32_t key[8] = {0}, out[16];\n"
            "    chacha20_block(key, 0, out);\n"
            "    for (int i = 0; i < %d; i++)\n        printf(\"0x%%08x\\n\", out[i]);\n"
            "    return 0;\n}\n" % len(vector))
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "draws.c"), os.path.join(tmp, "draws")
        with open(src, "w") as f:
            f.write(main)
        built = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-o", exe, src],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if built.returncode != 0:
            return ["the block does not compile:\n    " + built.stdout.replace("\n", "\n    ")]
        got = subprocess.run([exe], stdout=subprocess.PIPE, text=True, timeout=30).stdout.split()
    if got != vector:
        return ["the page's vector is %s; the block draws %s" % (vector, got)]
    return []


def env_table(bins, path, block):
    """docker/README.md's table of variables: a row for every `[RACE2048_X]` of race2048d
    --help; a row's backticked default is the one the image sets (the Dockerfile's ENV) or
    else --help's `(default X)`; a row for a variable --help lacks is one a compose file of
    the doc's folder reads."""
    helps = {}
    for line in run_help(bins, "race2048d", None):
        m = re.search(r"\[(RACE2048_[A-Z0-9_]+)\]$", line)
        if m:
            d = re.search(r"\(default ([^ )]+)\)", line)
            helps[m.group(1)] = d.group(1) if d else None
    folder = os.path.dirname(os.path.abspath(path))
    texts = {}
    for name in os.listdir(folder):
        if name.startswith(("compose", "Dockerfile")):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                texts[name] = f.read()
    image = dict(re.findall(r"\b(RACE2048_[A-Z0-9_]+)=(\S+)", texts.get("Dockerfile", "")))
    errors, rows = [], {}
    for line in block[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.match(r"^`([A-Z0-9_]+)`$", cells[0])
        if m:
            rows[m.group(1)] = cells[1]
    for var in sorted(set(helps) - set(rows)):
        errors.append("race2048d --help reads %s; the table has no row for it" % var)
    for var, default in sorted(rows.items()):
        if var not in helps:
            if not any(re.search(r"\b%s\b" % var, t) for n, t in texts.items() if n != "Dockerfile"):
                errors.append("%s: neither race2048d --help nor a compose file reads it" % var)
            continue
        m = re.match(r"^`([^`]+)`$", default)
        want = image.get(var, helps[var])
        if m and m.group(1) != want:
            errors.append("%s: default `%s` documented, %s %s" % (
                var, m.group(1), "the image sets" if var in image else "--help says", want))
    return errors


def folders_table(path, block):
    """README.md's table of folders: its `name/` rows are exactly the repository's top-level
    folders (as git tracks them), and its other rows name files that exist."""
    root = os.path.dirname(os.path.abspath(path))
    names = [n for line in block[2:] for n in re.findall(r"^\| `([^`]+)` \|", line)]
    errors = ["%s: no such file or folder" % n for n in names
              if not os.path.exists(os.path.join(root, n))]
    tracked = subprocess.run(["git", "-C", root, "ls-files"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    if tracked.returncode == 0:  # not a git checkout (a tarball): only existence
        folders = {l.split("/")[0] + "/" for l in tracked.stdout.splitlines()
                   if "/" in l and not l.startswith(".")}
        for f in sorted(folders - set(names)):
            errors.append("the folder %s has no row" % f)
    return errors


def programs_table(bins, path, block):
    """clients/README.md's table of programs: a row for every program the check was given but
    race2048d and for every subcommand of race2048-bench --help, each of which answers
    --help; the sources a row names exist next to the doc."""
    folder = os.path.dirname(os.path.abspath(path))
    errors, shown = [], set()
    for line in block[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.match(r"^`(race2048-[a-z]+)(?: ([a-z]+))?`$", cells[0])
        if not m:
            continue
        prog, sub = m.groups()
        shown.add((prog, sub))
        if prog not in bins:
            errors.append("%s: no such program" % prog)
            continue
        argv = [bins[prog]] + ([sub] if sub else []) + ["--help"]
        if subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          timeout=30).returncode != 0:
            errors.append("`%s` does not answer --help" % " ".join(argv[1:] and [prog] + argv[1:]))
        for src in re.findall(r"`([a-z_]+\.c)`", cells[-1]):
            if not os.path.exists(os.path.join(folder, src)):
                errors.append("%s: no source %s next to the doc" % (cells[0], src))
    progs = {p for p, _ in shown}
    for prog in sorted(set(bins) - {"race2048d"} - progs):
        errors.append("%s has no row" % prog)
    if "race2048-bench" in bins:
        usage = run_help(bins, "race2048-bench", None)[0]
        for sub in re.findall(r"(?:\] |\| )([a-z]+) ", usage + " "):
            if ("race2048-bench", sub) not in shown:
                errors.append("race2048-bench %s has no row" % sub)
    return errors


def text_commands(bins, flags, block):
    """The table of text commands: each row's command (its first word) is named by the screen
    `help` shows in the lobby of a real race2048d FLAGS (netcat's line mode)."""
    words = []
    for line in block[2:]:
        for cmd in re.findall(r"`([a-z]+)[^`]*`", line.split("|")[1]):
            if cmd not in words:
                words.append(cmd)
    server = Server(bins, flags)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE_S)
    out, head = b"", b"Commands (type one"
    try:
        sock.sendall(b"help\n")
        deadline = time.monotonic() + DEADLINE_S
        while (head not in out or b"\n> " not in out[out.find(head):]) and \
                time.monotonic() < deadline:
            if select.select([sock], [], [], deadline - time.monotonic())[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                out += chunk
    finally:
        sock.close()
        server.stop()
    text = out.decode(errors="replace")
    if head.decode() not in text:
        return ["no `help` screen (%s...) came: %r" % (head.decode(), text[-300:])]
    helped = text[text.find(head.decode()):]
    return ["`help` does not name `%s`" % w for w in words  # `help`: the screen itself
            if w != "help" and not re.search(r"\b%s\b" % w, helped)]


def routes_table(bins, flags, block):
    """The table of HTTP routes, asked of a real race2048d FLAGS's game port: each `GET /PATH`
    (a path of its own or after `, `) answers 200 (`limit=N` as 5), one with `ID` 404 for a
    game there is not; `any other path` 404; `a method other than` 405 with `Allow`."""
    import http.client
    server = Server(bins, flags)
    errors = []

    def ask(method, target):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=DEADLINE_S)
        try:
            conn.request(method, target)
            resp = conn.getresponse()
            resp.read()
            return resp.status, resp.getheader("Allow")
        finally:
            conn.close()

    try:
        for line in block[2:]:
            first = line.strip("|").split("|")[0].strip()
            if first == "any other path":
                got = ask("GET", "/no-such-page")[0]
                if got != 404:
                    errors.append("GET /no-such-page: %d, not 404" % got)
                continue
            if first.startswith("a method other than"):
                got, allow = ask("POST", "/")
                if got != 405 or allow != "GET, HEAD":
                    errors.append("POST /: %d, Allow %r, not 405 with Allow: GET, HEAD" % (got, allow))
                continue
            if "Upgrade" in first:
                continue  # a WebSocket: the http and transcript checks open one
            paths = re.findall(r"`(?:GET )?(/[^` ]*)`", first)
            for path in paths:
                target = path.replace("limit=N", "limit=5").replace("ID", "999999")
                want = 404 if "ID" in path else 200
                got = ask("GET", target)[0]
                if got != want:
                    errors.append("GET %s: %d, not %d" % (target, got, want))
    except OSError as e:
        errors.append("the requests stopped: %s" % e)
    finally:
        server.stop()
    return errors


def game_fields_table(bins, flags, block):
    """The table of a finished game's fields: its first column names (`field`) exactly the
    members of the `game` records a real race2048d FLAGS wrote while each of the preludes
    (`after=NAME`, a server each) ran."""
    shown = {f for line in block[2:] for f in re.findall(r"`([a-z_]+)`", line.split("|")[1])}
    errors, real = [], set()
    for prelude in [f for f in flags if f.startswith("after=")]:
        errs, records = journal_records(bins, [f for f in flags if not f.startswith("after=")]
                                        + [prelude])
        errors += errs
        for rec, _ in records:
            if rec.get("j") == "game":
                real |= set(rec)
    if not real:
        return errors + ["the preludes made no finished game"]
    for f in sorted(real - shown):
        errors.append("a finished game's record has `%s`; the table has no row for it" % f)
    for f in sorted(shown - real):
        errors.append("the table names `%s`, which no record of the preludes has" % f)
    return errors


UPGRADE = ["Upgrade: websocket", "Connection: Upgrade",
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]


def lines_match(doc, real):
    """real matches doc, a `...` line of doc standing for any lines (none included)."""
    if not doc:
        return not real
    if doc[0] == "...":
        return any(lines_match(doc[1:], real[k:]) for k in range(len(real) + 1))
    return bool(real) and doc[0] == real[0] and lines_match(doc[1:], real[1:])


def raw_http(bins, flags, block):
    """A request (its lines, `...` for the rest of a WebSocket upgrade), a blank line, then
    the response a real race2048d FLAGS's game port sends to it: its head, and its body if
    the server closes after it; `...` in the response stands for any lines."""
    blank = block.index("")
    request = []
    for line in block[:blank]:
        request += [h for h in UPGRADE if h.split(":")[0] not in
                    {l.split(":")[0] for l in block[:blank]}] if line == "..." else [line]
    want = block[blank + 1:]
    server = Server(bins, flags)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE_S)
    got = b""
    try:
        sock.sendall(("\r\n".join(request) + "\r\n\r\n").encode())
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if b"\r\n\r\n" in got and got.startswith(b"HTTP/1.1 101"):
                break  # a WebSocket: the head is all
            if not select.select([sock], [], [], deadline - time.monotonic())[0]:
                break
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    finally:
        sock.close()
        server.stop()
    head, _, body = got.decode(errors="replace").partition("\r\n\r\n")
    real = head.split("\r\n") + ([""] + body.rstrip("\n").split("\n") if body else [])
    if not lines_match(want, real):
        return ["documented:\n    %s\n  answered:\n    %s"
                % ("\n    ".join(want), "\n    ".join(real))]
    return []


def nats_conf(block):
    """A nats-server configuration that nats-server -t (test the configuration) accepts."""
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "nats.conf")
        with open(conf, "w") as f:
            f.write("\n".join(block) + "\n")
        got = subprocess.run(["nats-server", "-c", conf, "-t"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=30)
    return [] if got.returncode == 0 else ["nats-server -t: " + got.stdout.strip()]


def haproxy_conf(block):
    """An HAProxy configuration (or part) that haproxy -c finds no error in (exit 2, "will not
    start (no listener)", is a part with no frontend: no error either)."""
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "haproxy.cfg")
        with open(conf, "w") as f:
            f.write("\n".join(block) + "\n")
        got = subprocess.run(["haproxy", "-c", "-f", conf], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=30)
    if got.returncode in (0, 2) and "[ALERT]" not in got.stdout:
        return []
    return ["haproxy -c: " + "\n    ".join(l for l in got.stdout.splitlines() if "ALERT" in l)]


def metric_families(text):
    """name -> (type, label names) of the families a /metrics body declares."""
    fams = {}
    for line in text.splitlines():
        m = re.match(r"^# TYPE (\S+) (\S+)$", line)
        if m:
            fams[m.group(1)] = (m.group(2), set())
            continue
        m = re.match(r"^([a-z0-9_]+)(?:\{(.*)\})? ", line)
        if m and not line.startswith("#"):
            name = re.sub(r"_(bucket|sum|count)$", "", m.group(1)) if m.group(1) not in fams else m.group(1)
            labels = {kv.split("=")[0] for kv in (m.group(2) or "").split(",") if kv} - {"le"}
            if name in fams:
                fams[name][1].update(labels)
    return fams


def metric_table(bins, flags, block):
    """The table of metrics: its rows name (`name{label,...}`, with their type) exactly the
    families GET /metrics of a real race2048d FLAGS declares, with their label names."""
    fams, errors, shown = metric_families(get_metrics(bins, flags)), [], {}
    for line in block[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name, labels in re.findall(r"`([a-z0-9_]+)(?:\{([a-z_,]*)\})?`", cells[0]):
            shown[name] = (cells[1], set(filter(None, labels.split(","))))
    for name in sorted(set(fams) - set(shown)):
        errors.append("/metrics declares %s (%s); the table has no row for it" % (name, fams[name][0]))
    for name in sorted(set(shown) - set(fams)):
        errors.append("a row for %s, which /metrics does not declare" % name)
    for name in sorted(set(shown) & set(fams)):
        if shown[name] != fams[name]:
            errors.append("%s: %s {%s} documented, %s {%s} served" % (
                name, shown[name][0], ",".join(sorted(shown[name][1])), fams[name][0],
                ",".join(sorted(fams[name][1]))))
    return errors


def error_table(bins, flags, block):
    """A table of error codes: each row's code is one the server counts by
    (race2048_errors_total{code} of GET /metrics of a real race2048d FLAGS)."""
    known = set(re.findall(r'race2048_errors_total\{code="([a-z_]+)"\}', get_metrics(bins, flags)))
    errors = []
    for line in block[2:]:
        m = re.match(r"^\| `([a-z_]+)` \|", line)
        if m and m.group(1) not in known:
            errors.append("`%s` is no error code of the server (it has %s)"
                          % (m.group(1), ", ".join(sorted(known))))
    return errors


def run_screens(bins, args, block):
    """A `screens NAME FLAGS` block: (errors, the panes as shown)."""
    server = Server(bins, args[1:])
    try:
        def conn():
            c = Conn(server.port)
            c.expect = doc_screens.json_expect(c, DEADLINE_S)
            return c
        shown = doc_screens.run_scenario(args[0], server.port, conn, DEADLINE_S)
    except (TimeoutError, ConnectionError, OSError, RuntimeError) as e:
        return ["screens stopped: %s" % e], None
    finally:
        server.stop()
    mapping = Mapping()
    errors = doc_screens.compare_screens(block, shown, mapping)
    return errors, doc_screens.as_doc(shown, mapping)


def run_sh(block):
    """`$ COMMAND` lines run by bash; the lines after each are its stdout."""
    errors, out, i = [], [], 0
    while i < len(block):
        assert block[i].startswith("$ "), "a sh block begins with `$ `: %s" % block[i]
        j = i + 1
        while j < len(block) and not block[j].startswith("$ "):
            j += 1
        got = subprocess.run(["bash", "-c", block[i][2:]], stdout=subprocess.PIPE, text=True,
                             timeout=30).stdout.splitlines()
        if got != block[i + 1:j]:
            errors.append("`%s` documented:\n    %s\n  printed:\n    %s" % (
                block[i][2:], "\n    ".join(block[i + 1:j]), "\n    ".join(got)))
        out += [block[i]] + got
        i = j
    return errors, out


def run_http(bins, flags, block):
    """`$ curl -i URL` against a real race2048d; the block's other lines are the response."""
    m = re.match(r"^\$ curl -i http://127\.0\.0\.1:(\d+)(/\S*)$", block[0])
    if not m:
        return ["the first line is not $ curl -i http://127.0.0.1:PORT/PATH"], None
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_server(bins, flags, tmp)
        try:
            got = subprocess.run(["curl", "-s", "-i", "--max-time", str(DEADLINE_S),
                                  "http://127.0.0.1:%d%s" % (port, m.group(2))],
                                 stdout=subprocess.PIPE, text=True, timeout=60).stdout
        finally:
            proc.terminate()
            proc.wait(timeout=DEADLINE_S)
    lines = got.replace("\r\n", "\n").rstrip("\n").split("\n")
    want = block[:1] + lines
    if want != block:
        return ["documented:\n    %s\n  answered:\n    %s" % (
            "\n    ".join(block[1:]), "\n    ".join(lines))], want
    return [], want


def measured_shape(bins, argv, block):
    """The figures' lines are what PROG ARGS prints but for the measured values."""
    got = subprocess.run([bins[argv[0]]] + argv[1:], stdout=subprocess.PIPE, text=True,
                         timeout=120).stdout.splitlines()

    def shape(line):
        words = line.split()
        return [w if "=" not in w or w.split("=")[0] in ("impl", "verify") else w.split("=")[0]
                for w in words]
    if [shape(l) for l in got] != [shape(l) for l in block]:
        return ["documented:\n    %s\n  %s prints:\n    %s" % (
            "\n    ".join(block), " ".join(argv), "\n    ".join(got))]
    return []


# Valid values for the fields a request may require, so that a probe reaches the field probed.
PROBE_BASE = {"name": "ann", "room": "ABCD", "dir": "left", "token": "0" * 32, "game": 1,
              "arena": "ABCD", "minutes": 5}


def request_table(bins, flags, block, doc_text):
    rows = {}
    for line in block[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.match(r"^`([a-z_]+)`$", cells[0])
        if m:
            rows[m.group(1)] = set(re.findall(r"`([a-z_]+)`", cells[1]))
    named = set(re.findall(r'"type":"([a-z_]+)"', doc_text)) | set(rows)
    fields = set().union(*rows.values())
    for t in rows:  # and every key of the doc's examples of the requests
        for example in re.findall(r'\{"type":"%s"[^{}]*\}' % t, doc_text):
            fields |= set(re.findall(r'"([a-z_]+)":', example))
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_server(bins, flags + ["--max-games-per-min", "0"], tmp)
        try:
            def ask_all(msgs):
                """The first error answering each message, or None: sent at once, each
                followed by a ping whose pong ends its answers (a request's error comes
                before the next pong). A connection the server closes (the fifth failed
                resume or key closes it) is opened again for the rest."""
                answers, k, closed_at = [None] * len(msgs), 0, -1
                while k < len(msgs):
                    conn = Conn(port)
                    try:
                        conn.send('{"type":"hello","name":"ann"}')
                        for j in range(k, len(msgs)):
                            conn.send(json.dumps(msgs[j]))
                            conn.send('{"type":"ping","t":"probe %d"}' % j)
                        deadline = time.monotonic() + DEADLINE_S
                        while k < len(msgs):
                            line = json.loads(conn.read_line(deadline))
                            if line.get("type") == "pong" and line.get("t") == "probe %d" % k:
                                k += 1
                            elif line.get("type") == "error" and answers[k] is None:
                                answers[k] = line
                    except (ConnectionError, BrokenPipeError, ConnectionResetError):
                        if closed_at == k:  # closed twice at the same probe: past it
                            k += 1
                        closed_at = k
                    finally:
                        conn.sock.close()
                return answers

            types = sorted(named)
            known = {t for t, reply in zip(types, ask_all([dict(PROBE_BASE, type=t) for t in types]))
                     if not (reply and reply.get("code") == "unknown_type")}
            for t in sorted(known - set(rows)):
                errors.append("the server takes `%s`; the table has no row for it" % t)
            for t in sorted(set(rows) - known):
                errors.append("a row for `%s`, which the server does not take" % t)
            checked = sorted(set(rows) & known)
            probed = {t: sorted(fields - rows[t] - {"type"}) for t in checked}
            with concurrent.futures.ThreadPoolExecutor(8) as pool:  # a connection a type
                replies = dict(zip(checked, pool.map(lambda t: ask_all(
                    [dict(PROBE_BASE, type=t, **{f: {"wrong": "kind"}}) for f in probed[t]]),
                    checked)))
            for t in checked:
                for f, reply in zip(probed[t], replies[t]):
                    text = reply.get("message", "") if reply and reply.get("code") == "bad_message" else ""
                    if text.startswith(f + " ") or ('"%s"' % f) in text:
                        errors.append("`%s` reads `%s` (%s); its row does not name it" % (t, f, text))
        except (TimeoutError, ConnectionError, OSError) as e:
            errors.append("the probes stopped: %s" % e)
        finally:
            proc.terminate()
            proc.wait(timeout=DEADLINE_S)
    return errors


def key_paths(value, prefix=""):
    """Every key path in value (`results[].board`), lists by their elements."""
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + "." + k)
            out |= key_paths(v, prefix + "." + k)
    elif isinstance(value, list):
        for v in value:
            out |= key_paths(v, prefix + "[]")
    return out


def sent_lines(bins, cache={}):
    """type -> the lines of that type a real race2048d sent in a scripted session."""
    if "lines" in cache:
        return cache["lines"]
    got = {}
    server = Server(bins, ["--seed", "16793"])
    conns = {}
    deadline = time.monotonic() + DEADLINE_S

    def keep(line):
        msg = json.loads(line)
        got.setdefault(msg.get("type"), []).append(msg)
        return msg

    def step(who, *msgs):
        """who sends msgs, then a ping: every line before its pong is kept."""
        if who not in conns:
            conns[who] = Conn(server.port)
        for m in msgs:
            conns[who].send(json.dumps(m))
        conns[who].send('{"type":"ping","t":"sync"}')
        answers = []
        while True:
            msg = keep(conns[who].read_line(deadline))
            if msg.get("type") == "pong" and msg.get("t") == "sync":
                return answers
            answers.append(msg)

    def drain(who):
        step(who)

    try:
        step("A", {"type": "hello", "name": "ann"})
        step("B", {"type": "hello", "name": "bob"})
        room = [m for m in step("A", {"type": "create", "players": 2, "size": 3, "target": 16})
                if m["type"] == "room"][0]["room"]
        step("B", {"type": "join", "room": room})
        drain("A")
        step("C", {"type": "hello", "name": "cat"}, {"type": "watch", "room": room})
        step("A", {"type": "move", "dir": "left", "seq": 1}, {"type": "move", "dir": "x"},
             {"type": "ping", "t": 1700000000123})
        step("B", {"type": "move", "dir": "up"})
        step("C", {"type": "rooms"})
        step("D", {"type": "hello", "name": "dan"}, {"type": "quick", "players": 2, "size": 5})
        step("E", {"type": "hello", "name": "eve"}, {"type": "solo"})
        conns.pop("B").sock.close()
        deadline_drop = time.monotonic() + DEADLINE_S
        while not any(m.get("connected") is False for m in got.get("player", [])):
            if time.monotonic() > deadline_drop:
                raise TimeoutError("no player line after bob's drop")
            drain("A")
        step("A", {"type": "leave"})
        game = step("A", {"type": "history", "limit": 5})[-1]["games"][0]["game"]
        step("A", {"type": "replay", "game": game})
        server.proc.terminate()  # a shutdown: dan, still queued, is told
        while "bye" not in got:
            keep(conns["D"].read_line(deadline))
    finally:
        for c in conns.values():
            c.sock.close()
        server.stop()
    cache["lines"] = got
    return got


def check_shapes(bins, block):
    errors, real = [], sent_lines(bins)
    for line in block:
        line = line.strip()
        if line.startswith("< "):  # a message flow: the server's lines are checked
            line = line[2:]
        if not line or line.startswith(("> ", "...")):
            continue
        doc = load_doc(re.sub(r":\.\.\.(?=[,}])", ':"..."', line))  # `"winner":...`
        kind = doc.get("type")
        if kind not in real:
            errors.append("a %s line: the session sent none to compare with" % kind)
            continue
        same = [r for r in real[kind] if list(r) == list(doc)]
        if not same:
            errors.append("%s: keys %s documented; the server's are %s" % (
                kind, list(doc), " or ".join(str(list(r)) for r in real[kind][:3])))
            continue
        extra = key_paths(doc) - set().union(*(key_paths(r) for r in real[kind]))
        if extra:
            errors.append("%s: %s documented, never sent" % (kind, ", ".join(sorted(extra))))
    return errors


FIGURES = re.compile(r"\b[a-z_]+_per_s=\d")


def unmarked_figures(path, lines):
    """Blocks of benchmark figures with no marker at all (see `measured`)."""
    failures, i = [], 0
    while i < len(lines):
        if lines[i].startswith("    ") and FIGURES.search(lines[i]):
            k = i
            while k > 0 and lines[k - 1].startswith("    "):
                k -= 1
            j = k - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j < 0 or not MARK.match(lines[j]):
                failures.append("%s:%d: figures with no doc-check marker (measured DATE HOW, "
                                "or a check)" % (os.path.relpath(path), k + 1))
            while i < len(lines) and lines[i].startswith("    "):
                i += 1
        i += 1
    return failures


# --- the protocol version the prose claims -------------------------------------------------

VERSION_CLAIMS = [re.compile(p) for p in (
    r"^# The race2048 protocol, version (\d+)",
    r"[Tt]he wire protocol \(version (\d+)\)",
    r"the protocol version \((\d+), this page\)",
)]


def welcome_proto(bins, cache={}):
    """The `proto` of a real race2048d's welcome (asked once)."""
    if "proto" not in cache:
        server = Server(bins, [])
        try:
            conn = Conn(server.port)
            conn.send('{"type":"hello","name":"ann"}')
            cache["proto"] = json.loads(conn.read_line(time.monotonic() + DEADLINE_S))["proto"]
            conn.sock.close()
        finally:
            server.stop()
    return cache["proto"]


def check_versions(path, lines, bins):
    """Failures of the version claims in a file's prose (see the header)."""
    failures, proto, titled = [], None, None
    text = "\n".join(lines)
    for pat in VERSION_CLAIMS:
        for m in re.finditer(pat.pattern, text, re.M):
            proto = proto if proto is not None else welcome_proto(bins)
            line = text.count("\n", 0, m.start()) + 1
            if int(m.group(1)) != proto:
                failures.append("%s:%d: says protocol version %s, the welcome says %d"
                                % (os.path.relpath(path), line, m.group(1), proto))
            if pat is VERSION_CLAIMS[0]:
                titled = int(m.group(1))
    for k in range(1, (titled or 1)):
        title = "Changes from version %d" % k
        anchor = "(#changes-from-version-%d)" % k
        if not re.search(r"^\d+\. \[%s\]\(#" % title, text, re.M) or anchor not in text:
            failures.append("%s: the contents lack [%s]%s" % (os.path.relpath(path), title, anchor))
        if not re.search(r"^## %s$" % title, text, re.M):
            failures.append("%s: no heading '## %s'" % (os.path.relpath(path), title))
    return failures


# --- driver --------------------------------------------------------------------------

def check_file(path, bins, update):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    failures, checked = [], 0
    sessions = {}
    try:
        checked = check_blocks(path, lines, bins, update, sessions, failures)
        failures += check_versions(path, lines, bins) + unmarked_figures(path, lines)
    finally:
        for server in sessions.values():
            server.stop()
    if update:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    return checked, failures


def check_blocks(path, lines, bins, update, sessions, failures):
    checked = 0
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        args = m.group(1).split()
        kind = args[0]
        try:
            first, end, _, indent = find_block(lines, i + 1)
        except ValueError as e:
            failures.append("%s:%d: %s" % (os.path.relpath(path), i + 1, e))
            i += 1
            continue
        block = [l[len(indent):] for l in lines[first:end]]
        where = "%s:%d (%s)" % (os.path.relpath(path), i + 1, m.group(1))
        checked += 1
        want, errors = None, []
        if kind == "usage":
            want = usage_lines(bins, args[1], args[2] if len(args) > 2 else None)
        elif kind == "flags":
            got = set(re.findall(r"--[a-z][a-z0-9-]*", "\n".join(block)))
            need = help_flags(bins, args[1])
            if got != need:
                errors.append("flags documented but not in --help: %s; in --help but not documented: %s"
                              % (sorted(got - need) or "none", sorted(need - got) or "none"))
                want = synopsis(args[1], bins)
        elif kind == "flag-table":
            got = set(re.findall(r"^\| `(--[a-z][a-z0-9-]*)`", "\n".join(block), re.M))
            need = help_flags(bins, args[1]) - {"--help", "--version"}
            if got != need:
                errors.append("table rows but not in --help: %s; in --help but no row: %s (write the row by hand)"
                              % (sorted(got - need) or "none", sorted(need - got) or "none"))
        elif kind == "transcript":
            errors, want = run_transcript(bins, args[1:], block, sessions)
        elif kind == "cmd":
            errors, want = run_commands(bins, args[1:], block)
        elif kind == "second-server":
            errors, want = second_server(bins, args[1:], block)
        elif kind == "sh":
            errors, want = run_sh(block)
        elif kind == "http":
            errors, want = run_http(bins, args[1:], block)
        elif kind == "request-table":
            errors = request_table(bins, args[1:], block, "\n".join(lines))
        elif kind == "shape":
            errors = check_shapes(bins, block)
        elif kind == "request":
            errors = check_requests(bins, args[1:], block)
        elif kind == "journal-cmd":
            errors, want = run_journal_commands(bins, args[1:], block)
        elif kind == "cluster-second":
            errors, want = cluster_second(bins, args[1:], block)
        elif kind == "journal-table":
            errors = check_journal_table(bins, args[1:], block)
        elif kind == "metric-table":
            errors = metric_table(bins, args[1:], block)
        elif kind == "error-table":
            errors = error_table(bins, args[1:], block)
        elif kind == "listening":
            errors, want = listening_lines(bins, args[1:], block)
        elif kind == "python":
            errors = run_python(block)
        elif kind == "c-draws":
            errors = run_c_draws(block, "\n".join(lines))
        elif kind == "env-table":
            errors = env_table(bins, path, block)
        elif kind == "folders-table":
            errors = folders_table(path, block)
        elif kind == "programs-table":
            errors = programs_table(bins, path, block)
        elif kind == "text-commands":
            errors = text_commands(bins, args[1:], block)
        elif kind == "routes-table":
            errors = routes_table(bins, args[1:], block)
        elif kind == "game-fields":
            errors = game_fields_table(bins, args[1:], block)
        elif kind == "raw-http":
            errors = raw_http(bins, args[1:], block)
        elif kind == "nats-conf":
            errors = nats_conf(block)
        elif kind == "haproxy-conf":
            errors = haproxy_conf(block)
        elif kind == "journal":
            errors, want = check_journal(bins, args[1:], block)
        elif kind == "measured":
            if len(args) < 3 or not re.match(r"^\d{4}-\d{2}-\d{2}$", args[1]):
                errors.append("measured wants a date (YYYY-MM-DD) and how: measured DATE HOW")
            runs = [a[len("run="):].split(",") for a in args if a.startswith("run=")]
            if runs:
                errors = measured_shape(bins, runs[0], block)
        elif kind == "screens":
            errors, want = run_screens(bins, args[1:], block)
        elif kind == "metrics":
            errors = metric_series(bins, args[1:], block)
        elif kind == "nc":
            m = re.match(r"^\$ printf '(.*)' \| nc ", block[0])
            if not m:
                errors.append("the first line is not $ printf '...' | nc ...")
            else:
                sent = ["A> " + l for l in m.group(1).split("\\n") if l]
                errors, got = run_transcript(bins, args[1:], sent + ["A< " + l for l in block[1:]])
                want = got and block[:1] + [l[3:] for l in got[len(sent):]]
        else:
            errors.append("unknown kind %r" % kind)
        if kind == "usage" and want != block:
            errors.append("documented:\n    " + "\n    ".join(block) + "\n--help says:\n    " + "\n    ".join(want))
        if errors and update and want is not None and kind != "flag-table":
            lines[first:end] = [indent + l if l else l for l in want]
            print("updated %s" % where)
        elif errors:
            failures.append("%s\n  %s" % (where, "\n  ".join(errors)))
        i = first + 1
    return checked


def main():
    ap = argparse.ArgumentParser(description="check the marked doc blocks against the binaries")
    ap.add_argument("--update", action="store_true", help="rewrite stale blocks from the binaries")
    ap.add_argument("--bin", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("files", nargs="+")
    opts = ap.parse_args()
    bins = {name: os.path.abspath(path) for name, path in (b.split("=", 1) for b in opts.bin)}
    total, failures = 0, []
    # The files at once: their checks mostly wait on servers, so the wall time is the
    # longest file's, not the sum (--update prints what it rewrites as it goes).
    with concurrent.futures.ThreadPoolExecutor(len(opts.files)) as pool:
        for checked, f in pool.map(lambda path: check_file(path, bins, opts.update), opts.files):
            total += checked
            failures += f
    for f in failures:
        print("STALE " + f + "\n")
    print("%d doc blocks checked, %d stale" % (total, len(failures)))
    return 1 if failures or total == 0 else 0  # no marker left is a check that checks nothing


if __name__ == "__main__":
    sys.exit(main())
