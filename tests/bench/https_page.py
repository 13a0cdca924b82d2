#!/usr/bin/env python3
"""https_page.py - rough figures for the page over https vs http through HAProxy: page load
time, ms a move (a move sent by the page, its `state` back) and HAProxy's CPU a move, with the
setup of tests/web/test_browser_https.py (docker/haproxy-single.cfg, a make-cert.sh
certificate, headless Chromium), alternating http and https ROUNDS times after a warm-up.

usage: /usr/bin/python3 tests/bench/https_page.py RACE2048D [ROUNDS] [MOVES]
  (from the repository root; RACE2048D preferably a Release build)
"""
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SERVER = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
MOVES = int(sys.argv[3]) if len(sys.argv) > 3 else 200
sys.argv = [sys.argv[0], SERVER, os.path.join(ROOT, 'docker/make-cert.sh'),
            os.path.join(ROOT, 'docker/haproxy-single.cfg'),
            shutil.which('haproxy') or '/usr/sbin/haproxy']
sys.path.insert(0, os.path.join(ROOT, 'tests/web'))
import test_browser_https as t  # noqa: E402  (reads sys.argv above)

t.MOVES = MOVES


def cpu_s(pid):
    """User plus system CPU seconds of a process so far."""
    fields = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def main():
    tmp = tempfile.mkdtemp(prefix='race2048-https-bench-')
    d = None
    try:
        cert = os.path.join(tmp, 'race2048.pem')
        t.subprocess.run([t.MAKE_CERT, '-o', cert, 'localhost', '127.0.0.1'], check=True,
                         stdout=t.subprocess.DEVNULL)
        _, http_port = t.start_server(tmp)
        ports, _ = t.start_haproxy(tmp, cert, http_port)
        haproxy_pid = t.procs[-1].pid
        d = t.browser(tmp)
        urls = {'ws': 'http://127.0.0.1:%d/' % ports['http'],
                'wss': 'https://127.0.0.1:%d/' % ports['https']}
        for scheme, url in urls.items():  # warm-up: the browser's first start, caches
            t.race_over(d, scheme, url)
        got = {'ws': [], 'wss': []}
        for _ in range(ROUNDS):
            for scheme, url in urls.items():
                before = cpu_s(haproxy_pid)
                load_s, per_move, moves = t.race_over(d, scheme, url)
                got[scheme].append((load_s, per_move, (cpu_s(haproxy_pid) - before) / moves))
        print('\nmedians of %d rounds, up to %d moves each (HAProxy CPU: the whole round, page '
              'load and TLS handshake included, per move)' % (ROUNDS, t.MOVES))
        for scheme, rows in got.items():
            print('%-4s load %.3f s   %.2f ms a move   HAProxy %.3f ms CPU a move' % (
                'https' if scheme == 'wss' else 'http', statistics.median(r[0] for r in rows),
                statistics.median(r[1] for r in rows),
                1000 * statistics.median(r[2] for r in rows)))
    finally:
        if d:
            d.quit()
        for p in t.procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
