#!/usr/bin/env python3
"""proxy_figures.py - issue 25 item 2's figures: race2048d behind a real HAProxy, with and without the PROXY protocol.

Not a ctest: a benchmark. Usage:
  tests/bench/proxy_figures.py guesser SERVER_BINARY [proxy|plain]
      A victim (127.0.0.3) in a race with a partner (127.0.0.4) drops and resumes
      with its right token every 3 s, 12 times (36 s), while a guesser (127.0.0.2)
      sends wrong tokens without pause; all through HAProxy. proxy: send-proxy-v2 and
      --proxy-from 127.0.0.1; plain: neither (every client is 127.0.0.1 to the server).
      Prints how many right-token resumes succeeded.
  tests/bench/proxy_figures.py cpu SERVER_BINARY BENCH_BINARY [RUNS]
      race2048-bench server (100 clients, solo) through HAProxy, alternating plain and
      proxy setups RUNS times (default 3); prints race2048d's user+sys CPU per move.
Everything it starts (race2048d, haproxy) listens on free loopback ports and is
stopped after each run.
"""
import json, os, socket, subprocess, sys, tempfile, threading, time

TMP = tempfile.mkdtemp(prefix="proxy-figures-")
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_server(binary, proxy, extra=()):
    args = [binary, "--host", "127.0.0.1", "--port", "0", "--http-port", "off",
            "--journal", "none", "--log-level", "error", *extra]
    if proxy:
        args += ["--proxy-from", "127.0.0.1/32"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    return p, int(line.rsplit(":", 1)[1])


def start_haproxy(backend_port, proxy):
    front = free_port()
    cfg = os.path.join(TMP, f"haproxy-{front}.cfg")
    send = " send-proxy-v2 check check-send-proxy" if proxy else " check"
    with open(cfg, "w") as f:
        f.write(f"""global
    nbthread 1
    maxconn 4000
defaults
    mode tcp
    timeout connect 5s
    timeout client 120s
    timeout server 120s
frontend game
    bind 127.0.0.1:{front}
    default_backend nodes
backend nodes
    server n1 127.0.0.1:{backend_port}{send} inter 1s
""")
    h = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", front), timeout=1).close()
            return h, front
        except OSError:
            time.sleep(0.05)
    sys.exit("haproxy did not start")


class Client:
    def __init__(self, port, source):
        self.s = socket.socket()
        self.s.bind((source, 0))
        self.s.connect(("127.0.0.1", port))
        self.buf = b""

    def send(self, obj):
        self.s.sendall((json.dumps(obj) + "\n").encode())

    def next(self, timeout=5.0):
        self.s.settimeout(timeout)
        while b"\n" not in self.buf:
            try:
                d = self.s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                return None
            if not d:
                return None
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line) if line.startswith(b"{") else self.next(timeout)

    def expect(self, typ, timeout=5.0):
        while True:
            o = self.next(timeout)
            if o is None or o["type"] == typ or o["type"] == "error":
                return o

    def close(self):
        self.s.close()


def guesser(port, stop, counts):
    while not stop.is_set():
        try:
            g = Client(port, "127.0.0.2")
            g.s.sendall(b'{"type":"resume","token":"00"}\n' * 5)
            while (o := g.next(5.0)) is not None:
                counts["guesses"] += 1
            g.close()
        except OSError:
            time.sleep(0.01)


def figure_guesser(binary, mode):
    proxy = mode == "proxy"
    srv, port = start_server(binary, proxy)
    ha, front = start_haproxy(port, proxy)
    try:
        v, w = Client(front, "127.0.0.3"), Client(front, "127.0.0.4")
        v.send({"type": "hello", "name": "victim"})
        welcome = v.expect("welcome")
        vid, token = welcome["id"], welcome["token"]
        w.send({"type": "hello", "name": "partner"})
        w.expect("welcome")
        v.send({"type": "create", "players": 2})
        room = v.expect("room")["room"]
        w.send({"type": "join", "room": room})
        v.expect("start")
        w.expect("start")
        stop, counts = threading.Event(), {"guesses": 0}
        t = threading.Thread(target=guesser, args=(front, stop, counts), daemon=True)
        t.start()
        ok, results = 0, []
        started = time.time()
        for i in range(12):
            time.sleep(max(0, started + 3 * (i + 1) - time.time()))
            v.close()
            v = Client(front, "127.0.0.3")
            v.send({"type": "resume", "token": token})
            o = v.next(5.0)
            good = o is not None and o["type"] == "welcome" and o["id"] == vid
            ok += good
            results.append("ok" if good else (o or {}).get("code", "closed"))
        stop.set()
        print(f"guesser mode={mode} binary={binary} resumes_ok={ok}/12 over "
              f"{time.time() - started:.0f}s guesses_answered={counts['guesses']} "
              f"answers={','.join(results)}")
    finally:
        ha.terminate()
        ha.wait()
        srv.terminate()
        srv.wait()


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def figure_cpu(binary, bench, runs):
    seconds, warmup = 10, 1
    per = {"plain": [], "proxy": []}
    for r in range(runs):
        for mode in ("plain", "proxy"):
            proxy = mode == "proxy"
            srv, port = start_server(binary, proxy, ("--max-per-ip", "10000",
                                                     "--max-games-per-min", "0"))
            ha, front = start_haproxy(port, proxy)
            b = subprocess.Popen([bench, "server", "--port", str(front), "--clients", "100",
                                  "--seconds", str(seconds), "--warmup", str(warmup)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            # CPU over the middle of the measured window, against its moves/s.
            time.sleep(warmup + 1.5)
            c0, t0 = cpu_of(srv.pid), time.time()
            time.sleep(seconds - 2.5)
            c1, t1 = cpu_of(srv.pid), time.time()
            out = b.communicate()[0]
            rate = float(out.split("moves_per_s=")[1].split()[0])
            us = (c1 - c0) / (t1 - t0) / rate * 1e6
            per[mode].append(us)
            print(f"run {r} {mode}: moves_per_s={rate:.0f} race2048d_cpu_s_per_s="
                  f"{(c1 - c0) / (t1 - t0):.2f} cpu_us_per_move={us:.2f}", flush=True)
            ha.terminate()
            ha.wait()
            srv.terminate()
            srv.wait()
    for mode, v in per.items():
        print(f"figure cpu_us_per_move {mode}: {min(v):.2f}-{max(v):.2f} "
              f"(median {sorted(v)[len(v) // 2]:.2f})")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "guesser":
        figure_guesser(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "proxy")
    elif len(sys.argv) >= 4 and sys.argv[1] == "cpu":
        figure_cpu(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 3)
    else:
        sys.exit(__doc__)
