#!/usr/bin/env python3
# browsers_port.py - issue 25 item 9's figures for one race2048d binary: what a page of
# another site can open (WebSocket upgrades with a foreign Origin held open, then the
# player's own), the server CPU of one /metrics scrape (beside one /healthz, the HTTP
# cost alone), and the server CPU per move under race2048-bench server.
#
# usage: tests/bench/browsers_port.py --race2048d PATH --bench PATH [--rounds N]
# Run it on the binary before a change and after it, on an idle machine, and compare.
# CPU is the server's utime+stime from /proc/PID/stat (clock ticks), over enough work
# that a tick does not matter. Not a ctest: a benchmark, run by hand.
import argparse
import os
import re
import socket
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def start(binary, *extra):
    p = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", "0", "--http-port", "0",
         "--journal", "none", "--log-level", "error", "--max-games-per-min", "0",
         "--max-per-ip", "100000", "--max-clients", "100000", *extra],
        stdout=subprocess.PIPE, text=True)
    game = int(p.stdout.readline().rsplit(":", 1)[1])
    http = int(p.stdout.readline().rsplit(":", 1)[1])
    return p, game, http


def cpu(p):
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def upgrade(port, origin):
    s = socket.create_connection(("127.0.0.1", port))
    req = (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           "Sec-WebSocket-Version: 13\r\n" + (f"Origin: {origin}\r\n" if origin else "")
           + "\r\n")
    s.sendall(req.encode())
    head = b""
    s.settimeout(5)
    while b"\r\n" not in head:
        chunk = s.recv(1024)
        if not chunk:
            break
        head += chunk
    return s, int(head.split()[1]) if head else 0


def origin_figure(binary):
    """64 sockets of a foreign page (--max-per-ip 64, the default), then the player's."""
    p = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", "0", "--http-port", "0",
         "--journal", "none", "--log-level", "error"], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    http = int(p.stdout.readline().rsplit(":", 1)[1])
    held, opened = [], 0
    for _ in range(64):
        s, status = upgrade(http, "http://evil.example")
        opened += status == 101
        if status == 101:
            held.append(s)
        else:
            s.close()
    mine, status = upgrade(http, f"http://127.0.0.1:{http}")
    mine.close()
    for s in held:
        s.close()
    p.terminate()
    p.wait()
    print(f"foreign-origin upgrades opened: {opened}/64; the player's own then: {status}")


def request_cpu(p, port, path, n):
    s = socket.create_connection(("127.0.0.1", port))
    req = f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode()
    c0 = cpu(p)
    for _ in range(n):
        s.sendall(req)
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(65536)
        head, body = buf.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        while len(body) < length:
            body += s.recv(65536)
    used = cpu(p) - c0
    s.close()
    return used / n * 1e6, length


def scrape_figure(binary, rounds):
    p, game, http = start(binary)
    # Some clients, so the gauges have something to count.
    clients = [socket.create_connection(("127.0.0.1", game)) for _ in range(200)]
    for c in clients:
        c.sendall(b'{"type":"hello","name":"x"}\n')
    n = 10000
    for r in range(rounds):
        metrics, size = request_cpu(p, http, "/metrics", n)
        health, _ = request_cpu(p, http, "/healthz", n)
        print(f"round {r}: /metrics {metrics:.1f} us CPU per scrape ({size} bytes), "
              f"/healthz {health:.1f} us; render ~{metrics - health:.1f} us")
    for c in clients:
        c.close()
    p.terminate()
    p.wait()


def move_figure(binary, bench, rounds, clients, seconds, mode):
    for r in range(rounds):
        p, game, http = start(binary)
        c0 = cpu(p)
        out = subprocess.run(
            [bench, "server", "--port", str(game), "--clients", str(clients),
             "--seconds", str(seconds), "--warmup", "0", "--mode", mode],
            capture_output=True, text=True).stdout
        used = cpu(p) - c0
        # The server's own count of moves, from /metrics.
        s = socket.create_connection(("127.0.0.1", http))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        text = b""
        while chunk := s.recv(65536):
            text += chunk
        moves = int(re.search(rb"\nrace2048_moves_total (\d+)", text).group(1))
        p.terminate()
        p.wait()
        rate = re.search(r"([\d.]+) moves/s", out)
        print(f"round {r}: {moves} moves, {used:.2f} s CPU, "
              f"{used / moves * 1e6:.2f} us CPU per move"
              + (f" ({rate.group(1)} moves/s)" if rate else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--race2048d", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--mode", default="race")
    ap.add_argument("--only", default="origin,scrape,moves")
    a = ap.parse_args()
    only = a.only.split(",")
    if "origin" in only:
        origin_figure(a.race2048d)
    if "scrape" in only:
        scrape_figure(a.race2048d, a.rounds)
    if "moves" in only:
        move_figure(a.race2048d, a.bench, a.rounds, a.clients, a.seconds, a.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
