#!/usr/bin/env python3
"""runtime_figures.py - server CPU per race move (JSON and WebSocket) and idle bytes per connection, for several builds side by side, runs alternating.

Not a ctest: a benchmark, to compare builds (e.g. before and after a refactor) on one
machine in one session. Usage:

    tests/bench/runtime_figures.py [--runs N] [--figures race,ws,idle] LABEL=BUILD_DIR...

Each BUILD_DIR is a Release build with targets race2048d and race2048-bench. For every
figure, run r of every build is made before run r+1 of any (before, after, before, ...),
so that a machine busy with other work weighs on all of them alike.

- race / ws: a race2048d of the build (journal on, in a temporary folder; --max-per-ip
  1000, --max-games-per-min 0) under `race2048-bench server --mode race --clients 100
  --pipeline 4` (its own build's bench; `--ws` for ws, against the HTTP port). Server CPU
  (every thread, /proc/PID/task/*/schedstat) and race2048_moves_total (/metrics) are read
  twice inside the bench's measured window: cpu_us_per_move is their ratio, so the
  clients' connecting and warm-up do not count. moves_per_s is the bench's.
- idle: RSS growth of a fresh race2048d over N clients (default 10,000; after 64 that
  grow tables made once), silent until their text greeting, or after a JSON `hello` and
  its `welcome` (as test_server_idle does with 2,000), divided by N. The clients come in
  batches (default 500), each answered before the next, so that what a connection holds
  only while it is being greeted does not pile up: all at once, the silent figure swung
  by 20 % from run to run.

Prints one line per run ("run ...") and one per figure and build ("figure ...": min,
median, max over the runs)."""
import argparse, glob, os, re, selectors, socket, statistics, subprocess, sys, tempfile, time
import urllib.request

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("builds", nargs="+", help="LABEL=BUILD_DIR")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--figures", default="race,ws,idle")
ap.add_argument("--idle-clients", type=int, default=10000)
ap.add_argument("--idle-batch", type=int, default=500)
ap.add_argument("--clients", type=int, default=100)
ap.add_argument("--pipeline", type=int, default=4)
ap.add_argument("--seconds", type=float, default=6)
args = ap.parse_args()

BUILDS = []
for b in args.builds:
    label, _, d = b.partition("=")
    d = os.path.abspath(d or label)
    server, bench = f"{d}/server/race2048d", f"{d}/clients/race2048-bench"
    for exe in (server, bench):
        if not os.access(exe, os.X_OK):
            sys.exit(f"runtime_figures: no {exe}: build it first (Release)")
    BUILDS.append((label, server, bench))
TMP = tempfile.mkdtemp(prefix="runtime-figures-")
WARMUP = 2.0  # the bench's warm-up; samples start after it, with a margin for connecting


def out(line):
    print(line, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, ok, deadline_s=20):
    deadline = time.time() + deadline_s
    while not ok():
        if time.time() > deadline:
            raise SystemExit(f"runtime_figures: timed out waiting for {what}")
        time.sleep(0.05)


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def cpu_ns(pid):
    """CPU time of every thread of a process, in ns (schedstat's first field)."""
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError):
            pass  # a thread that just ended
    return total


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("runtime_figures: no VmRSS")


def moves_total(http_port):
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=5) as r:
        m = re.search(rb"^race2048_moves_total(?:\{[^}]*\})? (\d+)", r.read(), re.M)
    if not m:
        raise SystemExit("runtime_figures: /metrics has no race2048_moves_total")
    return int(m.group(1))


class Server:
    def __init__(self, exe, *extra, journal=True):
        self.port, self.http_port = free_port(), free_port()
        self.dir = tempfile.mkdtemp(dir=TMP)
        self.err = open(f"{self.dir}/stderr", "w+")
        cmd = [exe, "--host", "127.0.0.1", "--port", str(self.port), "--http-port",
               str(self.http_port), "--log-level", "warn", "--journal",
               f"{self.dir}/journal" if journal else "none", *extra]
        self.p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.err, cwd=self.dir)
        wait_for("the server's ports", lambda: listening(self.port) and listening(self.http_port))

    def stop(self):
        self.p.terminate()
        rc = self.p.wait(timeout=30)
        self.err.seek(0)
        said = self.err.read().strip()
        if rc != 0 or said:
            out(f"note server exit={rc} said: {said[:500]!r}")


def race_run(label, exe, bench, ws):
    s = Server(exe, "--max-per-ip", "1000", "--max-games-per-min", "0")
    try:
        cmd = [bench, "server", "--port", str(s.http_port if ws else s.port), "--clients",
               str(args.clients), "--mode", "race", "--pipeline", str(args.pipeline),
               "--warmup", str(WARMUP), "--seconds", str(args.seconds)] + (["--ws"] if ws else [])
        t0 = time.time()
        b = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The window opens WARMUP s after every client has its start (well under 1 s
        # here); sample from WARMUP + 1 s for seconds - 2 s.
        time.sleep(WARMUP + 1.0)
        c0, m0, t_a = cpu_ns(s.p.pid), moves_total(s.http_port), time.time()
        time.sleep(max(1.0, args.seconds - 2.0))
        c1, m1, t_b = cpu_ns(s.p.pid), moves_total(s.http_port), time.time()
        stdout, stderr = b.communicate(timeout=120)
        if b.returncode != 0 or " errors=0" not in stdout:
            raise SystemExit(f"runtime_figures: bench failed ({b.returncode}): {stdout} {stderr}")
        if t_b > t0 + WARMUP + args.seconds + 0.5 + 1.0:
            out(f"note {label}: the sample may have left the bench's window")
        mps = int(re.search(r"moves_per_s=(\d+)", stdout).group(1))
        p99 = re.search(r"lat_p99_us=(\d+)", stdout).group(1)
        return {"cpu_us_per_move": (c1 - c0) / 1000 / (m1 - m0), "moves_per_s": mps,
                "server_cpu_share": (c1 - c0) / 1e9 / (t_b - t_a), "lat_p99_us": int(p99)}
    finally:
        s.stop()


def open_idlers(port, n, json):
    """n clients, each waiting for its answer (the text greeting's prompt, or welcome)."""
    want = b'"welcome"' if json else b"> "
    sel = selectors.DefaultSelector()
    socks = []
    for i in range(n):
        c = socket.create_connection(("127.0.0.1", port))
        if json:
            c.sendall(b'{"type":"hello","name":"i%d"}\n' % i)
        c.setblocking(False)
        sel.register(c, selectors.EVENT_READ, [b""])
        socks.append(c)
    left, deadline = n, time.time() + 120
    while left:
        if time.time() > deadline:
            raise SystemExit(f"runtime_figures: {left} of {n} idle clients got no answer")
        for key, _ in sel.select(timeout=1):
            data = key.fileobj.recv(65536)
            if not data:
                raise SystemExit("runtime_figures: the server closed an idle connection")
            tail = key.data[0] + data
            if want in tail:
                sel.unregister(key.fileobj)
                left -= 1
            else:
                key.data[0] = tail[-16:]
    sel.close()
    return socks


def idle_run(label, exe, json):
    n = args.idle_clients
    s = Server(exe, "--max-clients", str(n + 1000), "--max-per-ip", str(n + 1000),
               journal=False)
    socks = []
    try:
        socks += open_idlers(s.port, 64, json)
        time.sleep(0.5)
        before = rss_kib(s.p.pid)
        while len(socks) < 64 + n:
            socks += open_idlers(s.port, min(args.idle_batch, 64 + n - len(socks)), json)
        time.sleep(0.5)
        after = rss_kib(s.p.pid)
        return {"bytes_per_conn": (after - before) * 1024 / n}
    finally:
        for c in socks:
            c.close()
        s.stop()


FIGS = {
    "race": lambda l, e, b: race_run(l, e, b, False),
    "ws": lambda l, e, b: race_run(l, e, b, True),
    "idle_silent": lambda l, e, b: idle_run(l, e, False),
    "idle_hello": lambda l, e, b: idle_run(l, e, True),
}
wanted = []
for f in args.figures.split(","):
    wanted += ["idle_silent", "idle_hello"] if f == "idle" else [f]
out(f"machine load={os.getloadavg()[0]:.2f},{os.getloadavg()[1]:.2f} cores={os.cpu_count()} "
    f"builds={','.join(l for l, _, _ in BUILDS)} runs={args.runs}")
for fig in wanted:
    results = {l: [] for l, _, _ in BUILDS}
    for r in range(1, args.runs + 1):
        for label, exe, bench in BUILDS:
            res = FIGS[fig](label, exe, bench)
            results[label].append(res)
            out(f"run figure={fig} build={label} run={r} load={os.getloadavg()[0]:.2f} " +
                " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in res.items()))
    for label, _, _ in BUILDS:
        for key in results[label][0]:
            vals = [x[key] for x in results[label]]
            out(f"figure {fig} build={label} {key} min={min(vals):.3f} "
                f"median={statistics.median(vals):.3f} max={max(vals):.3f}")
