#!/usr/bin/env python3
"""test_browser_https.py - the page over HTTPS through a real HAProxy: headless Chromium loads
https://127.0.0.1:PORT/ from Debian's haproxy ending TLS in front of race2048d's --http-port,
with docker/haproxy-single.cfg (the config compose.https.yaml ships; only its ports and the
certificate's path are changed) and a certificate docker/make-cert.sh makes. The page's
WebSocket is wss://, a race against a server bot is played over it (a key press and N moves,
each answered by its `state`), and the balancer's health check of race2048d passes. The same
page over plain http through the same HAProxy uses ws://; the load and move times of both are
printed (rough figures, nothing is asserted on them).

usage: test_browser_https.py RACE2048D MAKE_CERT_SH HAPROXY_SINGLE_CFG HAPROXY OUTDIR
"""
import csv
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from browser_harness import *  # noqa: F401,F403 (the shared set-up)

# ---------------------------------------------------------------- THE SWITCH ---
# PROXY = True: HAProxy sends a PROXY v2 header on every connection to race2048d
# (send-proxy-v2, and check-send-proxy on its health checks, as docker/haproxy-single.cfg
# ships) and race2048d runs with --proxy-from 127.0.0.2/32 (HAProxy connects from
# 127.0.0.2, as compose.https.yaml sets RACE2048_PROXY_FROM). False strips both from the
# config and the flag, for a server without --proxy-from.
PROXY = True
# -------------------------------------------------------------------------------

MAKE_CERT, SINGLE_CFG, HAPROXY = sys.argv[2:5]
# Moves played through each page, one at a time, each waiting for its answer.
MOVES = 40


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def replace_once(text, old, new):
    if text.count(old) != 1:
        raise SystemExit('%s: expected one %r (the test adapts that config)' % (SINGLE_CFG, old))
    return text.replace(old, new)


def haproxy_config(cert, http_port, ports):
    """docker/haproxy-single.cfg on loopback ports of this run, plus a plain-http frontend
    to the same backend (for the comparison) and a stats page (the health check's state)."""
    cfg = open(SINGLE_CFG).read()
    cfg = replace_once(cfg, 'bind :8443 ', 'bind 127.0.0.1:%d ' % ports['https'])
    cfg = replace_once(cfg, 'crt /etc/haproxy/race2048.pem', 'crt ' + cert)
    cfg = replace_once(cfg, ' 127.0.0.1:8048 ', ' 127.0.0.1:%d ' % http_port)
    cfg = replace_once(cfg, 'bind 127.0.0.1:8405', 'bind 127.0.0.1:%d' % ports['monitor'])
    # Where --proxy-from below expects the balancer.
    if cfg.count(' source 127.0.0.2 ') != 1:
        raise SystemExit('%s: HAProxy does not connect from 127.0.0.2' % SINGLE_CFG)
    if not PROXY:
        cfg = replace_once(cfg, ' send-proxy-v2', '')
        cfg = replace_once(cfg, ' check-send-proxy', '')
    return cfg + """
frontend http
    bind 127.0.0.1:%d
    default_backend race2048d

frontend stats
    mode http
    bind 127.0.0.1:%d
    timeout client 5s
    no log
    stats enable
    stats uri /stats
""" % (ports['http'], ports['stats'])


def get(port, path):
    try:
        with urllib.request.urlopen('http://127.0.0.1:%d%s' % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ''
    except OSError:
        return None, ''


def start_haproxy(tmp, cert, http_port):
    """HAProxy on free loopback ports (tried again on others if one was taken meanwhile),
    once its health check says race2048d is up."""
    for attempt in range(3):
        ports = {k: free_port() for k in ('https', 'http', 'monitor', 'stats')}
        cfg = os.path.join(tmp, 'haproxy.cfg')
        with open(cfg, 'w') as f:
            f.write(haproxy_config(cert, http_port, ports))
        log = open(os.path.join(tmp, 'haproxy.log'), 'w')
        p = subprocess.Popen([HAPROXY, '-db', '-f', cfg], stdout=log, stderr=subprocess.STDOUT)
        procs.append(p)
        deadline = time.time() + 20 * SLOWDOWN
        while time.time() < deadline and p.poll() is None:
            status, _ = get(ports['monitor'], '/healthz')
            if status == 200:
                _, stats = get(ports['stats'], '/stats;csv')
                rows = [r for r in csv.DictReader(io.StringIO(stats.lstrip('# ')))
                        if r['pxname'] == 'race2048d' and r['svname'] == 'race2048d']
                if rows and rows[0]['check_status'] == 'L7OK':
                    return ports, rows[0]
            time.sleep(0.05)
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=10)
            raise SystemExit('HAProxy never found race2048d healthy; its log:\n' +
                             open(log.name).read()[-2000:])
        text = open(log.name).read()
        if 'cannot bind' not in text and 'Address already in use' not in text:
            raise SystemExit('HAProxy did not start:\n' + text[-2000:])
    raise SystemExit('HAProxy could not bind free ports three times')


def https_browser():
    d = browser('--ignore-certificate-errors')  # the test's own self-signed certificate
    d.set_script_timeout(60 * SLOWDOWN)
    return d


def label_of(d, css):
    """The score and moves over the first board under css, read in one go (the page
    replaces the label's elements at each redraw)."""
    return d.execute_script(
        "const b = document.querySelector(arguments[0] + ' .label b');"
        "return b ? b.textContent : '';", css)


# Counts the `state` answers to our own moves on the page's socket; MOVE_N plays n moves
# with the page's own move(), each sent once the previous one is answered, and gives back
# [moves answered, milliseconds].
COUNT_OWN_STATES = """
    window.ownStates = 0;
    app.ws.addEventListener('message', (ev) => {
        const m = JSON.parse(ev.data);
        if (m.type === 'state' && app.game && m.id === app.game.you) {
            window.ownStates += 1;
            if (window.onOwnState) window.onOwnState(true);
        } else if (m.type === 'error' || m.type === 'end') {
            if (window.onOwnState) window.onOwnState(false);  // our board is done
        }
    });"""
MOVE_N = """
    const n = arguments[0], done = arguments[arguments.length - 1];
    const dirs = ['left', 'down', 'right', 'down'];
    const t0 = performance.now();
    let answered = 0;
    const finish = () => {
        window.onOwnState = null;
        done([answered, performance.now() - t0]);
    };
    const playing = () => app.game && !app.game.ended &&
        app.game.views.get(app.game.you).p.status === 'playing';
    const next = () => {
        if (answered === n || !playing()) return finish();
        move(dirs[answered % dirs.length]);
    };
    window.onOwnState = (answer) => {
        if (!answer) return finish();
        answered += 1;
        next();
    };
    next();"""


def race_over(d, scheme, url):
    """Loads url, races a level-1 bot over the page's socket (ws or wss as scheme says):
    one key press, then MOVES moves, then leaves. Returns (load s, ms a move, moves)."""
    started = time.time()
    d.get(url)
    # The first screen, or the lobby on a later visit (the name is remembered).
    wait(d, 'the first screen over ' + url, lambda d: shown('name')(d) or shown('lobby')(d))
    load_s = time.time() - started
    if shown('lobby')(d):
        d.find_element(By.ID, 'b-rename').click()
        wait(d, 'the first screen again over ' + url, shown('name'))
    ws_url = d.execute_script('return app.ws && app.ws.url')
    if not ws_url or not ws_url.startswith(scheme + '://127.0.0.1:'):
        raise SystemExit('the page at %s opened its WebSocket at %r, not %s://' %
                         (url, ws_url, scheme))
    name = d.find_element(By.ID, 'name')
    name.clear()
    name.send_keys(scheme + 'player')
    Select(d.find_element(By.CSS_SELECTOR, '#f-bot select[name=level]')).select_by_value('1')
    d.find_element(By.ID, 'b-race-bot').click()
    wait(d, 'the race against the bot over ' + scheme, shown('game'))
    d.execute_script(COUNT_OWN_STATES)
    # The bot's board changes: the server's moves reach the page too.
    wait(d, "the bot's first move over " + scheme, lambda d: re.search(
        r'\b[1-9]\d* moves?', label_of(d, '#others')))
    d.find_element(By.TAG_NAME, 'body').send_keys(Keys.ARROW_LEFT)
    wait(d, 'the answer to a key press over ' + scheme,
         lambda d: d.execute_script('return window.ownStates') >= 1)
    answered, ms = d.execute_async_script(MOVE_N, MOVES)
    # A board may fill up before MOVES (the bench asks for many), never in 20.
    if answered < min(MOVES, 20):
        raise SystemExit('only %d of %d moves answered over %s' % (answered, MOVES, scheme))
    label = label_of(d, '#me')
    if not re.search(r'\b[1-9]\d* moves?', label):
        raise SystemExit('our board did not move over %s: %r' % (scheme, label))
    errors = [e for e in d.get_log('browser') if e['level'] == 'SEVERE']
    if errors:
        raise SystemExit('console errors over %s: %r' % (scheme, errors))
    d.find_element(By.ID, 'b-leave').click()
    # The end screen, or the lobby if our board had filled up (the bench's long rounds).
    wait(d, 'the end after leaving over ' + scheme, lambda d: shown('lobby')(d) or (
        shown('end')(d) and 'You left the race' in d.find_element(By.ID, 'end-reason').text))
    per_move = ms / max(answered, 1)
    print('%-5s load %.2f s, %d moves in %.0f ms: %.2f ms a move, socket %s' %
          (scheme, load_s, answered, ms, per_move, ws_url))
    return load_s, per_move, answered


def main():
    tmp = tempfile.mkdtemp(prefix='race2048-https-')
    try:
        cert = os.path.join(tmp, 'race2048.pem')
        subprocess.run([MAKE_CERT, '-o', cert, 'localhost', '127.0.0.1'], check=True,
                       stdout=subprocess.DEVNULL, timeout=60 * SLOWDOWN)
        _, http_port = start_server(*(['--proxy-from', '127.0.0.2/32'] if PROXY else []))
        ports, row = start_haproxy(tmp, cert, http_port)
        print('HAProxy %s race2048d: check %s (%s)' % (
            'with PROXY v2 to' if PROXY else 'in front of', row['check_status'],
            row['check_desc'] if 'check_desc' in row else ''))
        d = https_browser()
        race_over(d, 'ws', 'http://127.0.0.1:%d/' % ports['http'])
        race_over(d, 'wss', 'https://127.0.0.1:%d/' % ports['https'])
        # Still healthy to its checks after the races (with PROXY: LOCAL headers).
        status, _ = get(ports['monitor'], '/healthz')
        if status != 200:
            raise SystemExit('HAProxy says race2048d is down after the races: %r' % status)
        print('https browser test passed')
    finally:
        clean_up()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
