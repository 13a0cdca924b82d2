#!/usr/bin/env python3
"""arena_figures.py - issue 28's arena figures against a race2048d, end to end over
loopback with light clients (asyncio, one socket each).

    tests/bench/arena_figures.py SERVER pairing [N ...]
    tests/bench/arena_figures.py SERVER play [--entrants 50] [--minutes 5] [--scale 1]

pairing: for each N (default 10 100 1000), N entrants join an arena of 4-player races
before its start (RACE2048_TEST_ARENA_SCALE=20: it starts 10 s after it is made); prints
the time from the arena's `starts` to each entrant's `start` (the first pairing round of
N waiting entrants, their rooms made and the starts delivered), p50 and max.

play: an arena of --entrants light clients (races of 4 on 4x4 to 64, each client moves
as soon as its previous move is answered) for --minutes (divided by --scale, as the
server's test-only RACE2048_TEST_ARENA_SCALE, which shortens the waits too); prints the
races played, the time from a race's `end` to the entrant's next `start` (p50, p99), and
the journal's bytes: all of them, and those of the arena's own records (`arena`,
`arena_ev`) per arena and per race.

SERVER is a race2048d binary (a Release build). key=value lines. A benchmark, not a
test: the figures depend on the machine."""
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

DIRS = ["left", "up", "right", "down"]


def now_ms():
    return time.time() * 1000.0


def start_server(binary, scale, journal=None):
    env = dict(os.environ, RACE2048_TEST_ARENA_SCALE=str(scale))
    args = [binary, "--host", "127.0.0.1", "--port", "0", "--http-port", "off",
            "--max-games-per-min", "0", "--max-clients", "20000", "--max-per-ip", "20000",
            "--log-level", "warn"]
    args += ["--journal", journal, "--journal-max", str(1 << 40)] if journal else \
        ["--journal", "none"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=env)
    port = int(proc.stdout.readline().decode().strip().rsplit(":", 1)[1])
    return proc, port


async def connect(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
    return reader, writer


def send(writer, obj):
    writer.write((json.dumps(obj) + "\n").encode())


async def expect(reader, kind):
    while True:
        m = json.loads(await reader.readline())
        if m["type"] == kind:
            return m


async def create(port, fields):
    r, w = await connect(port)
    send(w, {"type": "hello", "name": "host"})
    send(w, dict({"type": "arena_create", "name": "figures"}, **fields))
    a = await expect(r, "arena")
    w.close()
    return a


async def pairing_one(port, n):
    a = await create(port, {"minutes": 60, "players": 4, "starts_in": 200})
    code, starts = a["arena"], a["starts"]
    conns = []
    for i in range(n):
        r, w = await connect(port)
        send(w, {"type": "hello", "name": f"e{i}"})
        send(w, {"type": "arena_join", "arena": code})
        conns.append((r, w))
    for r, _ in conns:
        await expect(r, "arena")
    assert now_ms() < starts, "the entrants joined after the start: fewer please"

    async def first_start(r):
        await expect(r, "start")
        return now_ms() - starts

    lat = sorted(await asyncio.gather(*(first_start(r) for r, _ in conns)))
    for _, w in conns:
        w.close()
    return lat


def pairing(binary, sizes):
    for n in sizes:
        proc, port = start_server(binary, 20)
        try:
            lat = asyncio.run(pairing_one(port, n))
            full = (n // 4) * 4  # in races of 4 at once; the rest wait pair_wait
            print(f"pairing_entrants={n} full_races={n // 4} "
                  f"starts_to_start_ms_p50={lat[len(lat) // 2]:.1f} "
                  f"starts_to_start_ms_max_full_races={lat[full - 1]:.1f}")
        finally:
            proc.terminate()
            proc.wait()


async def player(port, code, i, gaps, races):
    r, w = await connect(port)
    send(w, {"type": "hello", "name": f"p{i}"})
    send(w, {"type": "arena_join", "arena": code})
    you, k, ended_at = None, 0, None
    while True:
        line = await r.readline()
        if not line:
            return
        m = json.loads(line)
        t = m["type"]
        if t == "start":
            you = m["you"]
            if ended_at is not None:
                gaps.append(now_ms() - ended_at)
                ended_at = None
            send(w, {"type": "move", "dir": DIRS[k % 4]})
            k += 1
        elif t == "state" and m.get("id") == you and you is not None:
            send(w, {"type": "move", "dir": DIRS[k % 4]})
            k += 1
        elif t == "end":
            you, ended_at = None, now_ms()
            races.append(1)
        elif t == "arena" and m.get("status") == "finished":
            w.close()
            return


async def play_all(port, entrants, minutes):
    a = await create(port, {"minutes": minutes, "players": 4, "size": 4, "target": 64,
                            "starts_in": 0})
    gaps, races = [], []
    await asyncio.gather(*(player(port, a["arena"], i, gaps, races)
                           for i in range(entrants)))
    return gaps, races


def arena_bytes(path):
    total = mine = 0
    with open(path, "rb") as f:
        for line in f:
            total += len(line)
            if line.startswith(b'{"j":"arena"') or line.startswith(b'{"j":"arena_ev"'):
                mine += len(line)
    return total, mine


def play(binary, entrants, minutes, scale):
    tmp = tempfile.mkdtemp(prefix="arena-figures-")
    journal = os.path.join(tmp, "j.jrn")
    proc, port = start_server(binary, scale, journal)
    try:
        gaps, races = asyncio.run(play_all(port, entrants, minutes))
    finally:
        proc.terminate()
        proc.wait()
    gaps.sort()
    total, mine = arena_bytes(journal)
    n_races = len(races) / 4  # each race of 4 ends for its 4 entrants
    print(f"entrants={entrants} minutes={minutes} scale={scale} races={n_races:.0f}")
    if gaps:
        print(f"end_to_next_start_ms_p50={gaps[len(gaps) // 2]:.1f} "
              f"end_to_next_start_ms_p99={gaps[min(len(gaps) - 1, len(gaps) * 99 // 100)]:.1f} "
              f"gaps={len(gaps)}")
    print(f"journal_bytes={total} arena_record_bytes={mine} "
          f"arena_record_bytes_per_race={mine / max(n_races, 1):.0f}")


def main():
    args = sys.argv[1:]
    binary, mode = args[0], args[1]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if mode == "pairing":
        pairing(binary, [int(x) for x in args[2:]] or [10, 100, 1000])
    else:
        def opt(name, default):
            return int(args[args.index(name) + 1]) if name in args else default
        play(binary, opt("--entrants", 50), opt("--minutes", 5), opt("--scale", 1))


if __name__ == "__main__":
    main()
