#!/usr/bin/env python3
"""bots_figures.py - issue 25's bot figures against a race2048d: one address hoarding bots,
and a 4x4 bot's pace under rooms of 8x8 bots.

    tests/bench/bots_figures.py hoard SERVER [--new]
    tests/bench/bots_figures.py pace SERVER [--new] [--rooms N]

SERVER is a race2048d binary; --new passes the flags only the server of issue 25 knows
(--max-bots-per-ip 0 for the pace run). Prints key=value lines. A benchmark, not a test:
the figures depend on the machine."""
import json
import os
import socket
import subprocess
import sys
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, binary, *flags):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", str(self.port), "--http-port", "off",
             "--journal", "none", "--log-level", "error", "--quick-bots", "0", *flags],
            stdout=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port)).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("the server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


class Client:
    def __init__(self, server, source="127.0.0.1", name="c"):
        self.sock = socket.create_connection(("127.0.0.1", server.port),
                                             source_address=(source, 0))
        self.buf = b""
        self.send({"type": "hello", "name": name})
        self.until("welcome")

    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def next(self, timeout=10):
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def until(self, *types, timeout=10):
        while True:
            m = self.next(timeout)
            if m["type"] in types:
                return m

    def close(self):
        self.sock.close()


def create(c, players, level=1, **fields):
    c.send({"type": "create", "players": players, "bots": players - 1, "level": level,
            **fields})
    m = c.until("start", "error")
    return m if m["type"] == "start" else m["code"]


def hoard(binary):
    """One address takes bots: (a) one connection creating rooms of 7 bots and leaving
    each at once; (b) --max-per-ip connections each keeping a room of 7 bots. After
    each, a client on 127.0.0.2 asks for a bot."""
    for way in ("one_connection_leaving", "many_connections_staying"):
        s = Server(binary)
        t0 = time.time()
        granted, refused, conns = 0, None, []
        if way == "one_connection_leaving":
            c = Client(s, name="hoarder")
            conns.append(c)
            # Until the server is full, or 40 s: past its games budget it waits.
            while time.time() - t0 < 40:
                m = create(c, 8, target=1048576)
                if m == "rate_limited":
                    time.sleep(0.25)
                    continue
                if not isinstance(m, dict):
                    refused = m
                    break
                granted += 7
                c.send({"type": "leave"})
                c.until("left")
        else:
            for i in range(64):
                try:
                    c = Client(s, name="h%d" % i)
                except (EOFError, OSError):
                    break
                conns.append(c)
                m = create(c, 8, target=1048576)
                if not isinstance(m, dict):
                    refused = m
                    break
                granted += 7
        took = time.time() - t0
        # What is still racing: the listed running rooms.
        probe = Client(s, "127.0.0.2", "probe")
        probe.send({"type": "rooms"})
        racing = sum(1 for r in probe.until("rooms")["rooms"] if r["started"])
        other = create(probe, 8)  # a full room of bots
        print("hoard way=%s bots_granted=%d seconds=%.1f refused=%s rooms_racing=%d "
              "other_address_gets_7_bots=%s" % (way, granted, took, refused, racing,
                                               isinstance(other, dict)))
        sys.stdout.flush()
        for c in conns:
            c.close()
        probe.close()
        s.stop()


def bot_moves(server, code):
    w = Client(server, name="w")
    w.send({"type": "watch", "room": code})
    start = w.until("start")
    at = time.time()
    w.close()
    return sum(p["moves"] for p in start["players"] if p.get("bot")), at


def pace(server, code, seconds):
    m0, t0 = bot_moves(server, code)
    time.sleep(seconds)
    m1, t1 = bot_moves(server, code)
    return (m1 - m0) / (t1 - t0)


def pace_run(binary, new, rooms):
    flags = ["--max-bots", "3000", "--max-output", "268435456", "--max-per-ip", "1000",
             "--max-games-per-min", "0", "--grace", "600"]
    if new:
        flags += ["--max-bots-per-ip", "0"]
    s = Server(binary, *flags)
    victim = Client(s, name="victim")
    code = create(victim, 2, 5, target=1048576)["room"]
    alone = pace(s, code, 10)
    load = []
    for i in range(rooms):
        c = Client(s, name="l%d" % i)
        start = create(c, 8, 5, size=8, target=1048576)
        load.append((c, start["room"]))
    time.sleep(2)
    loaded = pace(s, code, 10)
    each = pace(s, load[0][1], 5) / 7
    print("pace victim_4x4_level5_alone=%.2f victim_under_load=%.2f load_bots=%d "
          "load_8x8_bot_pace=%.2f" % (alone, loaded, rooms * 7, each))
    for c, _ in load:
        c.close()
    victim.close()
    s.stop()


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0] not in ("hoard", "pace"):
        raise SystemExit(__doc__)
    new = "--new" in args
    rooms = int(args[args.index("--rooms") + 1]) if "--rooms" in args else 70
    if args[0] == "hoard":
        hoard(os.path.abspath(args[1]))
    else:
        pace_run(os.path.abspath(args[1]), new, rooms)


if __name__ == "__main__":
    main()
