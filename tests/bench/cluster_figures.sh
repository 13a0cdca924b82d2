#!/usr/bin/env bash
# cluster_figures.sh - measures what cluster mode costs (throughput, latency, CPU, NATS bytes, memory per remote player) on loopback.
#
# Not a ctest: a benchmark, for a quiet machine. Usage:
#   tests/bench/cluster_figures.sh [BUILD_DIR]      (default build-rel, a Release build
#                                                    with targets race2048d race2048-bench)
# Environment: RUNS (repetitions of each figure, alternating setups; default 2),
# FIGURES (which of a b c d to run; default "a b c d"), WATCHERS (the client counts of
# figure d; default "1000 2000"), JOURNAL=1 (each node keeps a journal in the temporary
# directory, so that cluster nodes replicate their records; default: --journal none).
# Every server it starts is its own: a nats-server (-js, a temporary store) per setup
# and race2048d nodes on free loopback ports, all stopped (SIGTERM) after each run.
# Prints a line per run ("run ...") and a line per figure ("figure ..."): ranges over
# the runs. Node stderr is checked after every run; anything it said is printed
# ("note ..."), and a node that died or did not exit 0 on SIGTERM is reported.
set -euo pipefail
BUILD=${1:-build-rel}
exec python3 - "$BUILD" <<'PY'
import json, os, re, selectors, socket, subprocess, sys, tempfile, time, urllib.request

D = os.path.abspath(sys.argv[1])
SERVER, BENCH = f"{D}/server/race2048d", f"{D}/clients/race2048-bench"
for exe in (SERVER, BENCH):
    if not os.access(exe, os.X_OK):
        sys.exit(f"cluster_figures: no {exe}: build {sys.argv[1]} first (Release)")
RUNS = int(os.environ.get("RUNS", "2"))
FIGURES = os.environ.get("FIGURES", "a b c d").split()
JOURNAL = os.environ.get("JOURNAL", "") not in ("", "0")
WATCHERS = [int(n) for n in os.environ.get("WATCHERS", "1000 2000").split()]
TMP = tempfile.mkdtemp(prefix="cluster-figures-")
TICK = os.sysconf("SC_CLK_TCK")
# The bench's window: WARMUP s after every client has its game, then SECONDS s.
# CPU and NATS counters are sampled over [SAMPLE_AT, SAMPLE_AT + SAMPLE_S] after the
# bench starts: inside the window as long as the clients start within 2 s (checked).
WARMUP, SECONDS, SAMPLE_AT, SAMPLE_S = 2, 6, 4.0, 3.0

def out(line):
    print(line, flush=True)

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def wait_for(what, ok, deadline_s=15):
    deadline = time.time() + deadline_s
    while not ok():
        if time.time() > deadline:
            raise SystemExit(f"cluster_figures: timed out waiting for {what}")
        time.sleep(0.05)

def cpu_s(pid):
    """utime + stime of a process, in seconds (fields 14 and 15 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit(f"cluster_figures: no VmRSS for {pid}")

def http_get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.read().decode()

class Nats:
    def __init__(self):
        self.port, self.mon = free_port(), free_port()
        self.dir = tempfile.mkdtemp(dir=TMP, prefix="nats-")
        self.log = open(f"{self.dir}/nats.log", "w")
        self.p = subprocess.Popen(
            ["nats-server", "-js", "-sd", self.dir, "-a", "127.0.0.1",
             "-p", str(self.port), "-m", str(self.mon)],
            stdout=self.log, stderr=subprocess.STDOUT)
        def up():
            if self.p.poll() is not None:
                raise SystemExit(f"cluster_figures: nats-server exited, see {self.dir}/nats.log")
            try:
                self.varz()
                return True
            except OSError:
                return False
        wait_for("nats-server", up)
        self.url = f"nats://127.0.0.1:{self.port}"

    def varz(self):
        return json.loads(http_get(self.mon, "/varz"))

    def stop(self):
        """Reports NATS slow consumers, and a nats-server that had gone (its log says
        whether a signal stopped it: "Initiating Shutdown")."""
        if self.p.poll() is not None:
            out(f"note nats-server: GONE before the end, status {self.p.returncode}, "
                f"log {self.dir}/nats.log")
            return
        slow = self.varz().get("slow_consumers", 0)
        if slow:
            out(f"note nats-server: slow_consumers={slow}")
        self.p.terminate()
        self.p.wait(10)

NODE_FLAGS = ["--host", "127.0.0.1", "--port", "0", "--http-port", "0", "--journal", "none",
              "--log-level", "warn", "--max-games-per-min", "0", "--quick-bots", "0",
              "--max-per-ip", "10000"]
node_count = 0
# Said by every node of figure d (--max-clients 20000 with `ulimit -n` 20000): not news.
EXPECTED = re.compile(r"warn the descriptor limit \(\d+\) leaves room for")

class Node:
    def __init__(self, name, nats=None, extra=()):
        global node_count
        node_count += 1
        self.name = name
        self.err_path = f"{TMP}/{node_count:03d}-{name}.err"
        args = [SERVER, *NODE_FLAGS, *extra]
        if JOURNAL:
            args += ["--journal", f"{TMP}/{node_count:03d}-{name}.journal"]
        if nats:
            args += ["--cluster", nats.url, "--node", name]
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=open(self.err_path, "w"),
                                  text=True)
        self.port = self.http = None
        while self.http is None:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit(f"cluster_figures: node {name} did not start: "
                                 + open(self.err_path).read())
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
            m = re.search(r"http on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.http = int(m.group(1))

    def metric(self, name):
        for line in http_get(self.http, "/metrics").splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.split()[-1])
        return None

    def stop(self):
        """SIGTERM; reports a node that had died, did not exit 0, or wrote to stderr."""
        if self.p.poll() is not None:
            out(f"note node {self.name}: DIED before the end, status {self.p.returncode}")
        else:
            self.p.terminate()
            try:
                rc = self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                rc = "killed after 15 s"
            if rc != 0:
                out(f"note node {self.name}: exit status {rc} after SIGTERM")
        said = [line for line in open(self.err_path).read().splitlines()
                if not EXPECTED.search(line)]
        for line in said[:5]:
            out(f"note node {self.name} stderr: {line}")
        if len(said) > 5:
            out(f"note node {self.name} stderr: ... {len(said) - 5} more lines in {self.err_path}")

class Setup:
    """A set of nodes (with their nats-server when clustered) for one run."""
    def __init__(self, nodes, cluster, extra=()):
        self.nats = Nats() if cluster else None
        self.nodes = [Node(f"n{i}", self.nats, extra) for i in range(nodes)]
        if cluster:  # every node must see every other before quick picks a host
            wait_for("the nodes to see each other", lambda: all(
                n.metric("race2048_cluster_nodes") == nodes for n in self.nodes))

    def cpu(self):
        return sum(cpu_s(n.p.pid) for n in self.nodes)

    def stop(self):
        for n in self.nodes:
            n.stop()
        if self.nats:
            self.nats.stop()

def bench(setup, ports, clients, pipeline):
    """One race run; the bench's figures plus server CPU and NATS traffic per move."""
    args = [BENCH, "server", "--ports", ",".join(map(str, ports)), "--clients", str(clients),
            "--mode", "race", "--pipeline", str(pipeline), "--warmup", str(WARMUP),
            "--seconds", str(SECONDS)]
    t0 = time.time()
    b = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(max(0, t0 + SAMPLE_AT - time.time()))
    c0, n0 = setup.cpu(), setup.nats.varz() if setup.nats else None
    q0 = cpu_s(setup.nats.p.pid) if setup.nats else 0
    t1 = time.time()
    time.sleep(max(0, t1 + SAMPLE_S - time.time()))
    try:
        c1, n1 = setup.cpu(), setup.nats.varz() if setup.nats else None
    except OSError as e:
        out(f"note run: a server went away during the run ({e}); run dropped")
        b.kill()
        b.wait()
        return None
    q1 = cpu_s(setup.nats.p.pid) if setup.nats else 0
    dt = time.time() - t1
    stdout, stderr = b.communicate(timeout=120)
    wall = time.time() - t0
    for line in stderr.splitlines():
        out(f"note bench: {line}")
    m = dict(re.findall(r"(\w+)=(\S+)", stdout))
    if b.returncode != 0 or "moves_per_s" not in m:
        out(f"note bench: exit status {b.returncode}: {stdout.strip()}")
        return None
    mps = float(m["moves_per_s"])
    moves = mps * dt
    r = {"moves_per_s": mps, "p50_us": int(m["lat_p50_us"]), "p99_us": int(m["lat_p99_us"]),
         "errors": int(m["errors"]), "stale": int(m["stale"]),
         "games_per_s": int(m["games"]) / float(m["seconds"]),
         "cpu_us_per_move": (c1 - c0) / moves * 1e6,
         "server_cores": (c1 - c0) / dt}
    if setup.nats:
        r["nats_cores"] = (q1 - q0) / dt
        r["nats_bytes_per_move"] = (n1["in_bytes"] + n1["out_bytes"]
                                    - n0["in_bytes"] - n0["out_bytes"]) / moves
        r["nats_msgs_per_move"] = (n1["in_msgs"] + n1["out_msgs"]
                                   - n0["in_msgs"] - n0["out_msgs"]) / moves
        r["nats_msgs_per_game"] = r["nats_msgs_per_move"] * mps / max(r["games_per_s"], 1e-9)
    startup = wall - WARMUP - SECONDS
    if startup > SAMPLE_AT - WARMUP:
        out(f"note bench: clients took {startup:.1f} s to start: the CPU sample began "
            "before the measured window")
    return r

def fmt(v):
    return f"{v:.3g}" if isinstance(v, float) and abs(v) < 100 else f"{v:.0f}" \
        if isinstance(v, float) else str(v)

def ranges(results, keys):
    parts = []
    for k in keys:
        vs = [r[k] for r in results if r and k in r]
        if vs:
            lo, hi = min(vs), max(vs)
            parts.append(f"{k}={fmt(lo)}" if lo == hi else f"{k}={fmt(lo)}..{fmt(hi)}")
    return " ".join(parts)

SETUPS_A = [("1node-nocluster", 1, False), ("1node-cluster", 1, True), ("2nodes", 2, True)]
KEYS = ["moves_per_s", "p50_us", "p99_us", "cpu_us_per_move", "server_cores", "nats_cores",
        "nats_bytes_per_move", "nats_msgs_per_move", "games_per_s", "nats_msgs_per_game",
        "errors"]

def race_figures(setups, clients, pipelines, label):
    results = {}
    for run in range(RUNS):
        for k in pipelines:
            for name, nodes, cluster in setups:
                s = Setup(nodes, cluster)
                try:
                    r = bench(s, [n.port for n in s.nodes], clients, k)
                finally:
                    s.stop()
                results.setdefault((k, name), []).append(r)
                if r:
                    out(f"run {label} clients={clients} K={k} setup={name} run={run + 1} "
                        + " ".join(f"{key}={fmt(r[key])}" for key in KEYS if key in r))
    for k in pipelines:
        for name, _, _ in setups:
            rs = results[(k, name)]
            out(f"figure {label} race clients={clients} K={k} setup={name} runs={len(rs)} "
                + ranges(rs, KEYS))
    return results

# ------------------------------------------------------------------ figure d ---

def watchers(port, code, n):
    """n JSON clients on port each say hello and watch room code; returns the sockets
    once every one has its answer (room or start), and the errors they got."""
    sel = selectors.DefaultSelector()
    socks, bufs, done, errors = [], {}, set(), []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b'{"type":"hello","name":"w%d"}\n{"type":"watch","room":"%s"}\n'
                  % (i, code.encode()))
        s.setblocking(False)
        socks.append(s)
        bufs[s] = b""
        sel.register(s, selectors.EVENT_READ)
    deadline = time.time() + 60 + n / 50
    while len(done) + len(errors) < n:
        if time.time() > deadline:
            raise SystemExit(f"cluster_figures: only {len(done)} of {n} watchers answered")
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            data = s.recv(65536)
            if not data:
                errors.append("closed")
                sel.unregister(s)
                continue
            bufs[s] += data
            while b"\n" in bufs[s]:
                line, bufs[s] = bufs[s].split(b"\n", 1)
                if not line.startswith(b"{"):
                    continue
                t = json.loads(line).get("type")
                if t in ("room", "start") and s not in done:
                    done.add(s)
                elif t == "error":
                    errors.append(json.loads(line).get("code"))
    sel.close()
    return socks, errors

def memory_run(n, via_b):
    flags = ["--max-spectators", "5000", "--max-per-ip", "10000", "--max-clients", "20000"]
    s = Setup(2, True, flags)
    a, b = s.nodes
    try:
        creator = socket.create_connection(("127.0.0.1", a.port))
        creator.sendall(b'{"type":"hello","name":"owner"}\n{"type":"create","players":2}\n')
        f = creator.makefile("rb")
        code = None
        while code is None:
            msg = json.loads(f.readline())
            if msg.get("type") == "room":
                code = msg["room"]
        a0, b0 = rss_kib(a.p.pid), rss_kib(b.p.pid)
        socks, errors = watchers(b.port if via_b else a.port, code, n)
        a1, b1 = rss_kib(a.p.pid), rss_kib(b.p.pid)
        guests = a.metric("race2048_remote_guests") if via_b else None
        for c in socks:
            c.close()
        creator.close()
    finally:
        s.stop()
    if errors:
        out(f"note watchers: {len(errors)} errors, e.g. {errors[:3]}")
    return {"a_bytes_per_client": (a1 - a0) * 1024 / n, "b_bytes_per_client": (b1 - b0) * 1024 / n,
            "a_guests": guests, "errors": len(errors)}

def figure_d():
    res = {}
    for n in WATCHERS:
        for run in range(RUNS):
            for via_b in (True, False):
                r = memory_run(n, via_b)
                res.setdefault((n, via_b), []).append(r)
                out(f"run d watchers={n} via={'B' if via_b else 'A-direct'} run={run + 1} "
                    + " ".join(f"{k}={fmt(v)}" for k, v in r.items() if v is not None))
    for n in WATCHERS:
        rb, ra = res[(n, True)], res[(n, False)]
        out(f"figure d watchers={n} remote(on B): " + ranges(rb, ["b_bytes_per_client",
            "a_bytes_per_client", "errors"]).replace("b_bytes_per_client", "B_rss_per_watcher")
            .replace("a_bytes_per_client", "A_rss_per_guest")
            + " | direct(on A): " + ranges(ra, ["a_bytes_per_client", "errors"])
            .replace("a_bytes_per_client", "A_rss_per_spectator"))

# ---------------------------------------------------------------------- main ---

load = open("/proc/loadavg").read().split()[:3]
out(f"# cluster_figures: {D}, {os.cpu_count()} cores, load average {' '.join(load)}, "
    f"RUNS={RUNS}; node flags: {' '.join(NODE_FLAGS)}"
    + (" (and --journal FILE)" if JOURNAL else ""))
if "a" in FIGURES or "c" in FIGURES:
    res = race_figures(SETUPS_A, 100, [1, 4], "a")
    for k in (1, 4):
        out(f"figure c race clients=100 K={k} setup=2nodes "
            + ranges(res[(k, "2nodes")], ["nats_bytes_per_move", "nats_msgs_per_move"])
            + " (nats varz in+out over the CPU sample; a message published and delivered"
            " counts in both)")
if "b" in FIGURES:
    race_figures([("1node-nocluster", 1, False), ("1node-cluster", 1, True),
                  ("3nodes", 3, True)], 300, [4], "b")
if "d" in FIGURES:
    figure_d()
load = open("/proc/loadavg").read().split()[:3]
out(f"# done, load average {' '.join(load)}; node stderr files in {TMP}")
PY
