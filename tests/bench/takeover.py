#!/usr/bin/env python3
# takeover.py - the takeover time of cluster mode: kill -9 of a race's node to the first
# resume that works on the survivor, over N kills (default 20); prints p50 and max.
#
# usage: tests/bench/takeover.py [--kills N] [--race2048d PATH] [--nats-server PATH]
# It starts its own nats-server (-js, a temporary store, a free loopback port) and
# two nodes: "b" stays up; each round starts "a", runs a race of two on it with a few
# moves, waits until a's records are in the stream (race2048_journal_waiting_bytes 0),
# kills a with SIGKILL, then polls b's /metrics every 10 ms for the rebuilt game and
# resumes both players on b (the time is taken when both resumes have their `start`).
# Not a ctest: a benchmark, run by hand.
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
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


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    sys.exit(f"takeover: nothing listens on {port}")


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


def metric(port, name):
    s = socket.create_connection(("127.0.0.1", port), 5)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    m = re.search(rb"\n" + re.escape(name.encode()) + rb" (\d+)", data)
    return int(m.group(1)) if m else None


def start_node(binary, nats_url, name, journal):
    p = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", "0", "--http-port", "off",
         "--cluster", nats_url, "--node", name, "--journal", journal,
         "--log-level", "warn", "--max-games-per-min", "0", "--quick-bots", "0",
         "--grace", "120"],
        stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r":(\d+)$", line.strip())
    if not m:
        sys.exit(f"takeover: {name} did not start: {line!r}")
    return p, int(m.group(1))


def race(port):
    players = []
    for i in range(2):
        c = Client(port)
        c.send({"type": "hello", "name": f"p{i}"})
        w = c.expect("welcome")
        c.token, c.id = w["token"], w["id"]
        players.append(c)
    players[0].send({"type": "create", "players": 2})
    code = players[0].expect("room")["room"]
    players[1].send({"type": "join", "room": code})
    for c in players:
        c.expect("start")
    for _ in range(3):
        for c in players:
            for d in ("left", "up", "right", "down"):
                c.send({"type": "move", "dir": d})
                st = c.expect("state")
                while st["id"] != c.id:  # the other's move
                    st = c.expect("state")
                if st.get("moved"):
                    break
    return players


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--race2048d", default="build/server/race2048d")
    ap.add_argument("--nats-server", default=shutil.which("nats-server") or
                    "/usr/sbin/nats-server")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="r2048-takeover-")
    nats_port = free_port()
    nats = subprocess.Popen([args.nats_server, "-js", "-sd", os.path.join(tmp, "nats"),
                             "-a", "127.0.0.1", "-p", str(nats_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(nats_port)
    url = f"nats://127.0.0.1:{nats_port}"
    b, bport = start_node(args.race2048d, url, "b", os.path.join(tmp, "b.journal"))
    times = []
    try:
        for k in range(args.kills):
            a, aport = start_node(args.race2048d, url, "a", os.path.join(tmp, "a.journal"))
            players = race(aport)
            while metric(aport, "race2048_journal_waiting_bytes") != 0:
                time.sleep(0.01)
            taken = metric(bport, "race2048_cluster_games_taken_over_total")
            killed = time.monotonic()
            a.send_signal(signal.SIGKILL)
            a.wait()
            while metric(bport, "race2048_cluster_games_taken_over_total") <= taken:
                time.sleep(0.01)
            resumed = []
            for c in players:
                r = Client(bport)
                r.send({"type": "resume", "token": c.token})
                r.expect("welcome")
                r.expect("start")
                resumed.append(r)
            took = (time.monotonic() - killed) * 1000
            times.append(took)
            print(f"kill {k + 1}: resumed on b after {took:.0f} ms", flush=True)
            resumed[0].send({"type": "leave"})
            resumed[1].expect("end")
            for c in players + resumed:
                c.close()
    finally:
        b.send_signal(signal.SIGTERM)
        b.wait()
        nats.kill()
        nats.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    times.sort()
    print(f"takeover after kill -9 over {len(times)} kills: p50 "
          f"{statistics.median(times):.0f} ms, max {max(times):.0f} ms")


if __name__ == "__main__":
    main()
