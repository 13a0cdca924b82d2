#!/usr/bin/env python3
"""rated_figures.py - issue 27's rating figures against a race2048d: the server's CPU per
race ending, rated (two accounts) against unrated, and the journal's bytes per account
and per rated race.

    tests/bench/rated_figures.py SERVER [--races N] [--rounds R]

SERVER is a race2048d binary (a Release build). Each round plays N forfeit races of two
accounts (one creates, the other joins and leaves at once) unrated, then N rated, and
reads the server's user+system CPU from /proc around each batch; rounds alternate so
that a busy machine weighs on both. Prints key=value lines. A benchmark, not a test:
the figures depend on the machine."""
import json
import os
import socket
import subprocess
import sys
import tempfile


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def expect(self, kind):
        while True:
            m = json.loads(self.file.readline())
            if m["type"] == kind:
                return m


def race(a, b, rated):
    req = {"type": "create", "players": 2}
    if rated:
        req["rated"] = True
    a.send(req)
    code = a.expect("room")["room"]
    b.send({"type": "join", "room": code})
    a.expect("start")
    b.expect("start")
    b.send({"type": "leave"})
    b.expect("left")
    end = a.expect("end")
    assert ("ratings" in end) == rated


def main():
    args = sys.argv[1:]
    binary = args[0]
    races = int(args[args.index("--races") + 1]) if "--races" in args else 500
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 4
    tmp = tempfile.mkdtemp(prefix="rated-figures-")
    journal = os.path.join(tmp, "j.jrn")
    proc = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", "0", "--journal", journal,
         "--http-port", "off", "--max-games-per-min", "0", "--log-level", "warn",
         "--journal-max", str(1 << 40)],
        stdout=subprocess.PIPE)
    port = int(proc.stdout.readline().decode().strip().rsplit(":", 1)[1])
    try:
        a, b = Client(port), Client(port)
        for c, name in ((a, "Alice"), (b, "Bob")):
            c.send({"type": "hello", "name": name})
            c.expect("welcome")
            c.send({"type": "register"})
            c.expect("registered")
        size_accounts = os.path.getsize(journal)
        cost = {False: 0.0, True: 0.0}
        grew = {False: 0, True: 0}
        for _ in range(rounds):
            for rated in (False, True):
                before, size = cpu_s(proc.pid), os.path.getsize(journal)
                for _ in range(races):
                    race(a, b, rated)
                a.send({"type": "ping"})
                a.expect("pong")
                cost[rated] += cpu_s(proc.pid) - before
                grew[rated] += os.path.getsize(journal) - size
        n = races * rounds
        print(f"races_each={n}")
        print(f"journal_bytes_per_account={size_accounts / 2:.0f}")
        print(f"cpu_us_per_unrated_race={cost[False] / n * 1e6:.1f}")
        print(f"cpu_us_per_rated_race={cost[True] / n * 1e6:.1f}")
        print(f"journal_bytes_per_unrated_race={grew[False] / n:.0f}")
        print(f"journal_bytes_per_rated_race={grew[True] / n:.0f}")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
