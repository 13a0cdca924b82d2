#!/usr/bin/env python3
"""idle_bytes.py - what an idle connection costs race2048d: VmRSS growth over N clients.

Usage: idle_bytes.py RACE2048D [--clients 10000] [--hello]

Starts the server (a Release build gives the figure clients/README.md quotes),
opens N loopback clients that either stay silent until they have their text
greeting, or say hello and wait for their welcome, and prints the server's
VmRSS growth divided by N. Needs `ulimit -n` above N + 100.
"""
import argparse, os, re, resource, selectors, socket, subprocess, sys, tempfile, threading, time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server")
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--hello", action="store_true")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds to wait before reading RSS: the sweep (every second) gives "
                    "back idle sessions and rings")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, a.clients * 2 + 200), hard))
    n = str(a.clients + 100)
    work = tempfile.TemporaryDirectory()  # its journal goes there
    proc = subprocess.Popen([os.path.abspath(a.server), "--host", "127.0.0.1", "--port", "0", "--http-port", "off",
                             "--max-clients", n, "--max-per-ip", n, "--idle-timeout", "0",
                             "--log-level", "warn"],
                            cwd=work.name, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    port = None
    for line in proc.stdout:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if not port:
        sys.exit("no port in the server's log")
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    sel = selectors.DefaultSelector()
    want = b'"welcome"' if a.hello else b"> "
    # A few first, so that the baseline has the loop's buffers and one session.
    socks = []

    def open_wait(count):
        pending = {}
        for i in range(count):
            s = socket.create_connection(("127.0.0.1", port))
            if a.hello:
                s.sendall(b'{"type":"hello","name":"i%d"}\n' % (len(socks) + i))
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
            pending[s] = b""
            socks.append(s)
        deadline = time.time() + 120
        while pending and time.time() < deadline:
            for key, _ in sel.select(1):
                s = key.fileobj
                data = s.recv(65536)
                if not data:
                    sys.exit("the server closed an idle client")
                seen = pending[s] + data
                if want in seen:
                    sel.unregister(s)
                    del pending[s]
                else:
                    pending[s] = seen[-64:]
        if pending:
            sys.exit(f"{len(pending)} clients never got their answer")

    open_wait(64)
    time.sleep(0.5)
    before = rss_kib(proc.pid)
    open_wait(a.clients)
    time.sleep(a.settle)
    after = rss_kib(proc.pid)
    kind = "after hello" if a.hello else "silent"
    print(f"{kind}: {a.clients} clients, rss {before} -> {after} KiB: "
          f"{(after - before) * 1024 // a.clients} bytes each")
    proc.terminate()
    proc.wait()


if __name__ == "__main__":
    main()
