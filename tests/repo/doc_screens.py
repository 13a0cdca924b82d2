"""doc_screens.py - the text-mode screens the docs show, made again by real telnet and nc in tmux.

docs_true.py's `screens SCENARIO FLAGS` blocks: each scenario opens 80x24 tmux panes running the
real telnet and nc against a real race2048d FLAGS (a fixed --seed, so the boards are the same
every run), plays what the doc's prose says, and returns the panes' text as the doc shows them
(without trailing blanks). What is random (room codes, resume codes, seeds, salts, commits) is
compared through a one-to-one mapping, as the transcripts' codes are.
"""
import json
import os
import re
import subprocess
import threading
import time

COLS, ROWS = 80, 24

LEFT, UP, RIGHT, DOWN = "left", "up", "right", "down"
ARROW = {LEFT: "Left", UP: "Up", RIGHT: "Right", DOWN: "Down"}
LETTER = {LEFT: "a", UP: "w", RIGHT: "d", DOWN: "s"}


class Tmux:
    """A tmux server of our own (-L), its panes one session each, killed by close()."""

    def __init__(self, deadline_s):
        self.sock = "docs_true_%d_%d_%d" % (os.getpid(), threading.get_ident(),
                                            int(time.monotonic() * 1000))  # files run at once
        self.deadline_s = deadline_s
        self.started = False

    def run(self, *args):
        subprocess.run(["tmux", "-L", self.sock] + list(args), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)

    def open(self, name, cmd):
        self.started = True
        self.run("-f", "/dev/null", "new-session", "-d", "-s", name, "-x", str(COLS), "-y",
                 str(ROWS), cmd, ";", "set-window-option", "-t", name, "remain-on-exit", "on")

    def type(self, name, text):
        self.run("send-keys", "-t", name, "-l", text)

    def key(self, name, key):
        self.run("send-keys", "-t", name, key)

    def say(self, name, line):
        self.type(name, line)
        self.key(name, "Enter")

    def capture(self, name):
        return subprocess.run(["tmux", "-L", self.sock, "capture-pane", "-p", "-t", name],
                              check=True, stdout=subprocess.PIPE, text=True,
                              timeout=30).stdout

    def wait(self, name, what, pred):
        """Polls the pane until pred(text) holds; raises naming `what` at the deadline."""
        deadline = time.monotonic() + self.deadline_s
        while True:
            text = self.capture(name)
            if pred(text):
                return text
            if time.monotonic() > deadline:
                raise TimeoutError("pane %s never showed %s; it shows:\n%s" % (name, what, text))
            time.sleep(0.05)  # a poll interval, not a synchronisation

    def wait_str(self, name, needle):
        return self.wait(name, repr(needle), lambda t: needle in t)

    def close(self):
        if self.started:
            subprocess.run(["tmux", "-L", self.sock, "kill-server"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=30)


# --- boards on a screen ----------------------------------------------------------------------

def boards(text):
    """The boards side by side on a screen: a list (left to right) of rows of ints."""
    out = []
    for line in text.splitlines():
        parts = line.split("│")
        cells = [parts[k] for k in range(1, len(parts), 2)]
        for k, row in enumerate(cells):
            while len(out) <= k:
                out.append([])
            out[k].append([0 if c == "." else int(c) for c in row.split()])
    return out


def moves(text, k):
    """The move count under board k, or -1 when the screen shows none."""
    for line in text.splitlines():
        found = re.findall(r"(\d+) moves?\b", line)
        if found:
            return int(found[k]) if k < len(found) else -1
    return -1


def slide_left(row):
    tiles = [v for v in row if v]
    out, i = [], 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            out.append(2 * tiles[i])
            i += 2
        else:
            out.append(tiles[i])
            i += 1
    return out + [0] * (len(row) - len(out))


def moved(board, d):
    """The board after sliding it towards d (no spawn)."""
    t = [list(r) for r in zip(*board)] if d in (UP, DOWN) else [list(r) for r in board]
    if d in (RIGHT, DOWN):
        t = [slide_left(r[::-1])[::-1] for r in t]
    else:
        t = [slide_left(r) for r in t]
    return [list(r) for r in zip(*t)] if d in (UP, DOWN) else t


def movable(board, order):
    for d in order:
        if moved(board, d) != board:
            return d
    raise RuntimeError("no direction moves the board %r" % board)


def trimmed(text):
    """A pane as the doc shows it: no trailing blanks on a line, no trailing blank lines."""
    lines = [l.rstrip() for l in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def pane_block(title, text):
    return [title, ""] + trimmed(text)


# --- the scenarios ---------------------------------------------------------------------------

def open_client(tmux, name, prog, port):
    tmux.open(name, "%s 127.0.0.1 %d" % (prog, port))
    tmux.wait(name, "the lobby's prompt", lambda t: "You are player-" in t and "\n>" in t)


def join_code(text):
    m = re.search(r"Tell a friend to type:\s+join ([A-Z0-9]+)", text)
    if not m:
        raise RuntimeError("no room code on the creator's screen:\n" + text)
    return m.group(1)


def until_moves(tmux, name, k, n):
    return tmux.wait(name, "board %d with %d moves" % (k, n), lambda t: moves(t, k) == n)


def session(tmux, port, conn_factory):
    """README.md's and protocol/README.md's race: nina on nc creates, tom on telnet joins,
    both after `name` and `color off`; four moves each (tom's arrows, nina's lines)."""
    open_client(tmux, "nc", "nc", port)
    open_client(tmux, "tn", "telnet", port)
    for name, who in (("nc", "nina"), ("tn", "tom")):
        tmux.say(name, "name " + who)
        tmux.wait_str(name, "You are now %s." % who)
        tmux.say(name, "color off")
        tmux.wait_str(name, "Colour is off.")
    tmux.say("nc", "create")
    code = join_code(tmux.wait_str("nc", "Tell a friend to type:"))
    tmux.say("tn", "join " + code)
    for name in ("tn", "nc"):
        until_moves(tmux, name, 1, 0)
    for i in range(1, 5):
        tom = boards(tmux.capture("tn"))[0]
        tmux.key("tn", ARROW[movable(tom, (LEFT, UP, RIGHT, DOWN))])
        nina = boards(until_moves(tmux, "nc", 1, i))[0]
        tmux.say("nc", LETTER[movable(nina, (UP, LEFT, DOWN, RIGHT))])
        until_moves(tmux, "tn", 1, i)
        until_moves(tmux, "nc", 0, i)
    tn = until_moves(tmux, "tn", 0, 4)
    nc = until_moves(tmux, "nc", 1, 4)
    return (pane_block("$ telnet HOST PORT    (tom; 80x24, after `color off`)", tn) + [""] +
            pane_block("$ nc HOST PORT        (nina; 80x24, after `color off`)", nc))


def lobby(tmux, port, conn_factory):
    """The lobby a new telnet connection sees."""
    open_client(tmux, "tn", "telnet", port)
    return trimmed(tmux.capture("tn"))


def end_time_up(tmux, port, conn_factory):
    """protocol/README.md's end screen: jo (JSON) makes a race with a 5 s limit, nina on nc
    joins it and moves twice, the time runs out, then jo asks for a rematch."""
    jo = conn_factory()
    jo.send('{"type":"hello","name":"jo"}')
    jo.expect("welcome")
    jo.send('{"type":"create","players":2,"time_limit":5}')
    code = jo.expect("room")["room"]
    open_client(tmux, "nc", "nc", port)
    tmux.say("nc", "name nina")
    tmux.wait_str("nc", "You are now nina.")
    tmux.say("nc", "color off")
    tmux.wait_str("nc", "Colour is off.")
    tmux.say("nc", "join " + code)
    for i in (1, 2):
        nina = boards(until_moves(tmux, "nc", 0, i - 1))[0]
        tmux.say("nc", LETTER[movable(nina, (LEFT, RIGHT, UP, DOWN))])
    until_moves(tmux, "nc", 0, 2)
    tmux.wait_str("nc", "time is up")
    jo.expect("end")
    jo.send('{"type":"rematch"}')
    return trimmed(tmux.wait_str("nc", "jo wants a rematch"))


SCENARIOS = {"session": session, "lobby": lobby, "end-time-up": end_time_up}

# What differs from run to run on a screen: (pattern, class of the value in group 1).
VARYING = [
    (re.compile(r"room ([A-Z0-9]{4,8})\b"), "room"),
    (re.compile(r"\bjoin ([A-Z0-9]{4,8})\b"), "room"),
    (re.compile(r"\bresume ([A-Z0-9]{6,12})\b"), "resume"),
    (re.compile(r"\bcommit ([0-9a-f]{16,64})\b"), "commit"),
    (re.compile(r"^seed ([0-9a-f]{64})$"), "seed"),
    (re.compile(r"^salt ([0-9a-f]{32})$"), "salt"),
]


def compare_screens(doc, real, mapping):
    """Line by line; the varying values must map one to one (mapping: docs_true.Mapping)."""
    errors = []
    if len(doc) != len(real):
        errors.append("%d lines documented, %d shown" % (len(doc), len(real)))
    for n, (d, r) in enumerate(zip(doc, real)):
        d, r = d.rstrip(), r.rstrip()
        same = d == r
        if not same:
            dn, rn = d, r
            for pat, cls in VARYING:
                dv, rv = pat.findall(dn), pat.findall(rn)
                if len(dv) != len(rv) or not all(mapping.bind(cls, a, b) for a, b in zip(dv, rv)):
                    break
                dn, rn = pat.sub("<%s>" % cls, dn), pat.sub("<%s>" % cls, rn)
            same = dn == rn
        if not same:
            errors.append("line %d:\n    documented: %s\n    shown:      %s" % (n + 1, d, r))
    return errors


def as_doc(real, mapping):
    """The shown lines with the codes, seeds, salts and commits the doc already has for them,
    so that --update changes only what changed."""
    out = []
    for line in real:
        for pat, cls in VARYING:
            line = pat.sub(lambda m: m.group(0).replace(
                m.group(1), mapping.back.get((cls, m.group(1)), m.group(1))), line)
        out.append(line)
    return out


def run_scenario(name, port, conn_factory, deadline_s):
    if name not in SCENARIOS:
        raise ValueError("unknown screens scenario %r (known: %s)" % (name, ", ".join(SCENARIOS)))
    tmux = Tmux(deadline_s)
    try:
        return SCENARIOS[name](tmux, port, conn_factory)
    finally:
        tmux.close()


def json_expect(conn, deadline_s):
    """conn.expect(type): the next line of that type (others skipped), as a dict."""
    def expect(kind):
        deadline = time.monotonic() + deadline_s
        while True:
            msg = json.loads(conn.read_line(deadline))
            if msg.get("type") == kind:
                return msg
            if msg.get("type") == "error":
                raise RuntimeError("the server answered %r" % msg)
    return expect
