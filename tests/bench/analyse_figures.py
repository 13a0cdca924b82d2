#!/usr/bin/env python3
"""analyse_figures.py - issue 29's analysis figures: the time race2048-replay --analyse
and the page's WebAssembly analysis take per move, on games race2048-bot plays.

    tests/bench/analyse_figures.py SERVER BOT REPLAY [WASM] [--runs N] [--records FILE]

SERVER, BOT and REPLAY are the race2048d, race2048-bot and race2048-replay binaries; WASM
(optional, build/server/engine.wasm) is timed in node as the page runs it (w_ai_judge
before every move; with the race's target and moves left when the module takes them).
The games: a solo 4x4 game to 2048 (seed 42) cut at 1000 moves, the same game in full,
and races of two bots to 64 and to 2048 on 4x4, and to 64 on 8x8 (--records FILE: a journal's game records instead,
the first solo one and the races, so that two builds are timed on the same games; written
there when FILE does not exist). Prints key=value lines, the best of N runs.
A benchmark, not a test: the figures depend on the machine."""
import json
import os
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


def play(server, bot, journal):
    """Plays the games on a fresh server; returns the journal's game records."""
    port = free_port()
    proc = subprocess.Popen([server, "--host", "127.0.0.1", "--port", str(port),
                             "--http-port", "off", "--journal", journal,
                             "--log-level", "error", "--seed", "7"],
                            stdout=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit("the server did not start")
                time.sleep(0.05)
        base = [bot, "--host", "127.0.0.1", "--port", str(port)]
        subprocess.run(base + ["--solo", "--seed", "42"], check=True,
                       stdout=subprocess.DEVNULL)
        for size, target in ((4, 64), (4, 2048), (8, 64)):
            a = subprocess.Popen(base + ["--create", "--players", "2", "--size", str(size),
                                         "--target", str(target), "--name", "ann"],
                                 stdout=subprocess.PIPE, text=True)
            room = a.stdout.readline().strip().split("=", 1)[1]
            subprocess.run(base + ["--join", room, "--name", "bob"], check=True,
                           stdout=subprocess.DEVNULL)
            a.wait(60)
        time.sleep(0.5)  # the last records' sync
    finally:
        proc.terminate()
        proc.wait(10)
    with open(journal) as f:
        return [r for r in map(json.loads, f) if r.get("j") == "game"]


def time_replay(replay, rec, runs):
    """The best of runs of race2048-replay --analyse on a journal of rec: seconds."""
    with tempfile.NamedTemporaryFile("w", suffix=".journal", delete=False) as f:
        f.write(json.dumps(rec) + "\n")
    best = None
    for _ in range(runs):
        t = time.perf_counter()
        out = subprocess.run([replay, f.name, "--analyse", str(rec["game"])],
                             capture_output=True, text=True, check=True).stdout
        took = time.perf_counter() - t
        best = took if best is None else min(best, took)
    os.unlink(f.name)
    return best, out


NODE = r"""
const fs = require('fs');
const [wasmPath, recPath, runs] = process.argv.slice(1);
const rec = JSON.parse(fs.readFileSync(recPath, 'utf8'));
const DIR = { l: 0, r: 1, u: 2, d: 3 };
WebAssembly.instantiate(fs.readFileSync(wasmPath), { env: {} }).then(({ instance }) => {
  const e = instance.exports;
  const t0 = performance.now();
  e.w_ai_init();
  const init = performance.now() - t0;
  const seed = Buffer.from(String(rec.seed));
  const out = {};
  for (const p of rec.results) {
    const dirs = rec.moves[String(p.id)] || '';
    let best = Infinity, slowest = 0;
    // ai/judge.h's deadline: a race's player who did not win by the target, or any
    // player of a race the clock ended, had exactly the moves they made.
    const deadline = typeof rec.room === 'string' &&
      ((rec.reason === 'target' && p.id !== rec.winner) || rec.reason === 'time');
    for (let r = 0; r < Number(runs); r++) {
      new Uint8Array(e.memory.buffer, e.w_seed_buf(), seed.length).set(seed);
      if (e.w_new(rec.size, seed.length) < 0) throw new Error('seed');
      const t = performance.now();
      for (let k = 0; k < dirs.length; k++) {
        if (e.w_ai_goal) e.w_ai_goal(rec.target || 0, deadline ? dirs.length - k : 0);
        const t1 = performance.now();
        e.w_ai_judge(DIR[dirs[k]]);
        if (r === 0) slowest = Math.max(slowest, performance.now() - t1);
        e.w_move(DIR[dirs[k]]);
      }
      best = Math.min(best, performance.now() - t);
    }
    out[p.id] = { moves: dirs.length, ms: best, slowest };
  }
  console.log(JSON.stringify({ init, players: out }));
});
"""


def time_wasm(wasm, rec, runs):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(json.dumps(rec))
    out = subprocess.run(["node", "-e", NODE, wasm, f.name, str(runs)],
                         capture_output=True, text=True, check=True).stdout
    os.unlink(f.name)
    return json.loads(out)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs, records = 3, None
    if "--runs" in sys.argv:
        runs = int(sys.argv[sys.argv.index("--runs") + 1])
        args.remove(str(runs))
    if "--records" in sys.argv:
        records = sys.argv[sys.argv.index("--records") + 1]
        args.remove(records)
    server, bot, replay = args[:3]
    wasm = args[3] if len(args) > 3 else None
    if records and os.path.exists(records):
        with open(records) as f:
            recs = [r for r in map(json.loads, f) if r.get("j") == "game"]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            recs = play(server, bot, os.path.join(tmp, "j"))
        if records:
            with open(records, "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in recs)
    solo = next(r for r in recs if "room" not in r)
    races = [r for r in recs if "room" in r]
    cut = dict(solo, game=1000001, moves={k: v[:1000] for k, v in solo["moves"].items()})
    games = [("solo_1000", cut), ("solo_full", solo)] + [
        ("race_%dx%d_%d" % (r["size"], r["size"], r["target"]), r) for r in races]
    for name, rec in games:
        moves = sum(len(v) for v in rec["moves"].values())
        secs, out = time_replay(replay, rec, runs)
        mistakes = [ln.split(": biggest mistakes:")[1].strip()
                    for ln in out.splitlines() if "biggest mistakes:" in ln]
        line = "analyse game=%s moves=%d replay_total_ms=%.0f replay_ms_per_move=%.3f" % (
            name, moves, secs * 1000, secs * 1000 / max(moves, 1))
        if wasm:
            w = time_wasm(wasm, rec, runs)
            ms = sum(p["ms"] for p in w["players"].values())
            slowest = max(p["slowest"] for p in w["players"].values())
            line += (" wasm_total_ms=%.0f wasm_ms_per_move=%.3f wasm_slowest_move_ms=%.2f"
                     " wasm_init_ms=%.0f" % (ms, ms / max(moves, 1), slowest, w["init"]))
        print(line)
        print("analyse game=%s mistakes=%s" % (name, json.dumps(mistakes)))


if __name__ == "__main__":
    main()
