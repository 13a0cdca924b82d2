#!/usr/bin/env python3
# one_owner.py - figures for "a node name is held by one process" and "one server per
# journal" (issue 25, items 1 and 10), measured the same way on any race2048d binary.
#
# usage: tests/bench/one_owner.py [--rounds N] [--race2048d PATH] [--replay PATH]
#                                 [--nats-server PATH]
# Names: starts its own nats-server (-js, a temporary store, a free port), a node "b"
# and two processes both started with --node a (each its own journal, --grace 2, so
# that rebuilt copies nobody resumes end by forfeit soon). If the second "a" starts,
# N races of two are started at once, each on one of the two "a" processes in turn
# (a join from b to a room of "a" is not reliably answered while two processes are
# "a"), kept moving for 8 s, then one player of each leaves (one `end` is seen); after a pause for stray copies to end, everything is stopped and the finished
# records of each room are counted across the three journals (distinct lines): a room
# with more than one has two verdicts. Journal: two servers started in one folder on
# the default journal; if the second starts, 5 solo games are played on each, both are
# stopped, and race2048-replay is run on the file.
# Not a ctest: a benchmark, run by hand.
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), 5)
        self.buf = b""

    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def next(self, timeout=5):
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def expect(self, kind, skip=("state", "player", "room")):
        while True:
            m = self.next()
            if m["type"] == kind:
                return m
            if m["type"] not in skip:
                raise RuntimeError(f"expected {kind}, got {m}")

    def close(self):
        self.sock.close()


def start(binary, args, cwd, err_path, timeout=20):
    """Starts race2048d; returns (process, port) or (process, None) if it exited."""
    err = open(err_path, "w")
    p = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0", "--http-port", "off",
                          "--max-games-per-min", "0"] + args, cwd=cwd,
                         stdout=subprocess.PIPE, stderr=err, text=True)
    line = p.stdout.readline()
    if not line.startswith("race2048d listening on"):
        p.wait(timeout)
        return p, None
    return p, int(line.rsplit(":", 1)[1])


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        return p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def finished_by_room(paths):
    rooms = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.startswith('{"j":"game"'):
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if "room" in rec:
                    rooms.setdefault(rec["room"], set()).add(line.strip())
    return rooms


def names(args, tmp):
    nats_port = free_port()
    nats = subprocess.Popen([args.nats_server, "-js", "-a", "127.0.0.1", "-p", str(nats_port),
                             "-sd", os.path.join(tmp, "nats")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"nats://127.0.0.1:{nats_port}"
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", nats_port), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    common = ["--cluster", url, "--grace", "2", "--move-timeout", "5"]
    journals = [os.path.join(tmp, n) for n in ("a1.journal", "a2.journal", "b.journal")]
    a1, pa1 = start(args.race2048d, common + ["--node", "a", "--journal", journals[0]], tmp,
                    os.path.join(tmp, "a1.err"))
    b, pb = start(args.race2048d, common + ["--node", "b", "--journal", journals[2]], tmp,
                  os.path.join(tmp, "b.err"))
    time.sleep(1.5)
    a2, pa2 = start(args.race2048d, common + ["--node", "a", "--journal", journals[1]], tmp,
                    os.path.join(tmp, "a2.err"))
    if pa2 is None:
        with open(os.path.join(tmp, "a2.err")) as f:
            said = f.read().strip().splitlines()[-1]
        print(f"names: the second process under --node a exited {a2.returncode} at start: "
              f"{said}")
        homes = [pa1]
    else:
        print("names: the second process under --node a started (both run as node a)")
        homes = [pa1, pa2]
    # Every race is started at once and kept moving for 8 s (several beats, so
    # that whatever claims an incarnation finds them running), then ended.
    races, failed = [], 0
    for r in range(args.rounds):
        home = homes[r % len(homes)]
        try:
            p0 = Client(home)
            p0.send({"type": "hello", "name": "p0"})
            p0.expect("welcome")
            p0.send({"type": "create", "players": 2})
            code = p0.expect("room", skip=())["room"]
            p1 = Client(home)
            p1.send({"type": "hello", "name": "p1"})
            p1.expect("welcome")
            p1.send({"type": "join", "room": code})
            p0.expect("start")
            p1.expect("start")
            races.append((code, p0, p1))
        except (OSError, EOFError, RuntimeError, ValueError) as e:
            failed += 1
            print(f"names: race {r}: {e}")
    until = time.monotonic() + 8
    while time.monotonic() < until:
        for code, p0, p1 in races:
            for c in (p0, p1):
                for d in ("left", "up", "right", "down"):
                    try:
                        c.send({"type": "move", "dir": d})
                        if c.expect("state", skip=("player",)).get("moved"):
                            break
                    except (OSError, EOFError, RuntimeError, ValueError):
                        break
        time.sleep(0.2)
    played = []
    for code, p0, p1 in races:
        try:
            p0.send({"type": "leave"})
            p1.expect("end")
            played.append(code)
        except (OSError, EOFError, RuntimeError, ValueError) as e:
            failed += 1
            print(f"names: race {code}: {e}")
        p0.close()
        p1.close()
    time.sleep(12)  # rebuilt copies nobody resumes end by forfeit (--grace 2)
    for p in (a1, a2, b):
        stop(p)
    nats.send_signal(signal.SIGTERM)
    nats.wait(10)
    rooms = finished_by_room(journals)
    twice = sum(1 for code in played if len(rooms.get(code, ())) > 1)
    none = sum(1 for code in played if not rooms.get(code))
    print(f"names: {len(played)} races ended ({failed} failed), {twice} with more than one "
          f"verdict, {none} with none")


def journal(args, tmp):
    folder = os.path.join(tmp, "folder")
    os.mkdir(folder)
    s1, p1 = start(args.race2048d, [], folder, os.path.join(tmp, "s1.err"))
    s2, p2 = start(args.race2048d, [], folder, os.path.join(tmp, "s2.err"))
    servers = [(s1, p1)]
    if p2 is None:
        with open(os.path.join(tmp, "s2.err")) as f:
            said = f.read().strip().splitlines()[-1]
        print(f"journal: the second server in the folder exited {s2.returncode} at start: "
              f"{said}")
    else:
        print("journal: the second server in the folder started on the same journal")
        servers.append((s2, p2))
    games = 0
    for _, port in servers:
        c = Client(port)
        c.send({"type": "hello", "name": "solo"})
        c.expect("welcome")
        for _ in range(5):
            c.send({"type": "solo", "size": 3})
            c.expect("start")
            for d in ("left", "right"):
                c.send({"type": "move", "dir": d})
                c.expect("state")
            c.send({"type": "leave"})
            c.expect("end")
            c.expect("left")
            games += 1
        c.close()
    for p, _ in servers:
        stop(p)
    path = os.path.join(folder, "race2048.journal")
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    records = sum(1 for line in lines if line.startswith('{"j":"game"'))
    stray = sum(1 for line in lines if not line.startswith("{"))
    rc = subprocess.run([args.replay, path], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
    print(f"journal: {games} games played, {records} finished records in the file, "
          f"{stray} stray lines, race2048-replay exit {rc}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.path.join(here, "..", "..", "build")
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--race2048d", default=os.path.join(build, "server", "race2048d"))
    ap.add_argument("--replay", default=os.path.join(build, "clients", "race2048-replay"))
    ap.add_argument("--nats-server", default=shutil.which("nats-server") or "nats-server")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="one_owner-")
    try:
        journal(args, tmp)
        names(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
