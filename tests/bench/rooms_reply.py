#!/usr/bin/env python3
"""rooms_reply.py - the size of a `rooms` reply and its round trip with R running races of
two players (each player scored a little): a measurement for the rooms rows' fields.

usage: rooms_reply.py RACE2048D [RACES]   (prints one key=value line)
"""
import json
import re
import socket
import subprocess
import sys
import time

SERVER = sys.argv[1]
RACES = int(sys.argv[2]) if len(sys.argv) > 2 else 50


class Client:
    def __init__(self, port, name):
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.file = self.sock.makefile('rb')
        self.send(type='hello', name=name)
        self.expect('welcome')

    def send(self, **msg):
        self.sock.sendall((json.dumps(msg) + '\n').encode())

    def expect(self, type_):
        while True:
            line = self.file.readline()
            if not line:
                raise SystemExit('closed before ' + type_)
            m = json.loads(line)
            if m['type'] == type_:
                return m, len(line)


def main():
    p = subprocess.Popen([SERVER, '--host', '127.0.0.1', '--port', '0', '--http-port', 'off',
                          '--journal', 'none', '--log-level', 'warn', '--max-per-ip', '1000',
                          '--max-games-per-min', '0'], stdout=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r':(\d+)$', p.stdout.readline().strip()).group(1))
        clients = []
        for i in range(RACES):
            a, b = Client(port, 'ann%d' % i), Client(port, 'bob%d' % i)
            a.send(type='create', players=2)
            code = a.expect('room')[0]['room']
            b.send(type='join', room=code)
            a.expect('start')
            b.expect('start')
            for d in ('left', 'up', 'right', 'down'):
                a.send(type='move', dir=d)
            clients += [a, b]
        asker = Client(port, 'asker')
        time.sleep(1.1)  # a measurement, not a test: past the reply's second
        asker.send(type='rooms')
        _, size = asker.expect('rooms')
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            asker.send(type='rooms')
            asker.expect('rooms')
        us = (time.perf_counter() - t0) / n * 1e6
        print('rooms races=%d reply_bytes=%d round_trip_us=%.1f' % (RACES, size, us))
    finally:
        p.terminate()
        p.wait(timeout=10)


if __name__ == '__main__':
    main()
