#!/usr/bin/env python3
"""test_browser_loads.py - many page loads in a real browser (Debian's headless Chromium
through chromedriver and python3-selenium) against the real race2048d: every load must
reach the name screen. Browsers open sockets ahead of need and use them seconds later;
on the game port such a socket is greeted as text after 300 ms, so a load could hang at
"Connecting...". This is the check that it never does on --http-port.

Loads go to http://127.0.0.1:PORT/ and to http://race2048.lan:PORT/ (a host name that
Chromium maps to 127.0.0.1 with --host-resolver-rules), from a fresh profile and from a
warm one (the same --user-data-dir reused by a second browser, so that Chromium's
predictor preconnects to what it saw), by navigation, reload and a link to the page.

usage: test_browser_loads.py RACE2048D [--port http|game] [--legacy] [--rounds N]
                             [--deadline S] [--report-only] [--attach PORT]

  --port game     load from the game port instead (to show the difference; not a test)
  --legacy        the server has no --http-port flag (a build from before it); implies
                  --port game
  --rounds N      N - 1 fresh browsers load 5 times each, then two warm ones
                  load each URL 2 * N + 1 times (default 4: 51 loads in all)
  --deadline S    how long one load may take to reach the name screen (default 15)
  --report-only   print the figures, exit 0 whatever they are
  --attach PORT   load from a server already listening on 127.0.0.1:PORT
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

SLOWDOWN = float(os.environ.get('RACE2048_TEST_SLOWDOWN', '1'))
HOST_NAME = 'race2048.lan'
# The first screen of the page: shown once its WebSocket is open.
FIRST_SCREEN = 'v-name'
# A person reading the page: long enough for a socket Chromium opened ahead
# of need to pass the game port's 300 ms detection window unused. Not a wait
# for anything: the stimulus the browser gets.
THINK_S = 0.25

procs = []
temp_dirs = []


def start_server(server, legacy):
    temp_dirs.append(tempfile.mkdtemp(prefix='race2048-loads-'))
    args = [server, '--host', '127.0.0.1', '--port', '0', '--log-level', 'warn',
            '--journal', 'none']
    if not legacy:
        args += ['--http-port', '0']
    p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    procs.append(p)
    ports = {}
    for kind, want in (('game', 'listening on'), ('http', 'http on')):
        if legacy and kind == 'http':
            break
        line = p.stdout.readline()
        m = re.search(r'^race2048d %s 127\.0\.0\.1:(\d+)$' % want, line.strip())
        if not m:
            raise SystemExit('race2048d did not say where it listens (%s): %r' % (want, line))
        ports[kind] = int(m.group(1))
    return ports


def browser(profile):
    opts = webdriver.ChromeOptions()
    # Background networking stays on (chromedriver turns it off unless told
    # not to): the sockets a browser opens ahead of need are what this test
    # is about.
    for flag in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
                 '--no-first-run', '--disable-dev-shm-usage', '--window-size=1280,800',
                 '--host-resolver-rules=MAP %s 127.0.0.1' % HOST_NAME,
                 '--user-data-dir=' + profile):
        opts.add_argument(flag)
    opts.add_experimental_option('excludeSwitches', ['disable-background-networking'])
    opts.binary_location = shutil.which('chromium') or '/usr/bin/chromium'
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    driver_path = shutil.which('chromedriver') or '/usr/bin/chromedriver'
    return webdriver.Chrome(service=Service(driver_path), options=opts)


class Tally:
    def __init__(self):
        self.rows = []  # (phase, url, how, ok, why)

    def add(self, phase, url, how, ok, why=''):
        self.rows.append((phase, url, how, ok, why))

    def failures(self):
        return [r for r in self.rows if not r[3]]


def one_load(d, how, url, deadline):
    """One page load by `how` (get, reload or link); returns (ok, why)."""
    try:
        # A mark the new document cannot have: the old page still showing
        # is not a load.
        d.execute_script('window.__oldPage = true')
    except WebDriverException:
        pass
    try:
        if how == 'get':
            d.get(url)
        elif how == 'reload':
            d.refresh()
        else:  # a link on the page to the page, as a person clicks it
            d.execute_script(
                "const a = document.createElement('a'); a.href = arguments[0];"
                "a.textContent = 'again'; document.body.appendChild(a); a.click();", url)
    except WebDriverException as e:
        return False, 'navigation: %s' % str(e).splitlines()[0][:200]
    try:
        WebDriverWait(d, deadline, poll_frequency=0.05).until(lambda d: d.execute_script(
            "if (window.__oldPage) return false;"
            "const v = document.getElementById(arguments[0]);"
            "return !!v && !v.hidden;", FIRST_SCREEN))
        return True, ''
    except Exception:
        try:
            body = d.execute_script('return document.body ? document.body.innerText : ""')
        except WebDriverException:
            body = '?'
        return False, 'no name screen within %.0f s; page says %r' % (
            deadline, (body or '')[:120].replace('\n', ' | '))


def console_errors(d):
    try:
        return [e['message'][:200] for e in d.get_log('browser') if e['level'] == 'SEVERE']
    except WebDriverException:
        return []


def session(tally, phase, profile, urls, hows, deadline, errors):
    """A browser on profile loads each URL by each of hows in turn."""
    d = browser(profile)
    d.set_page_load_timeout(deadline)
    try:
        for url in urls:
            for i, how in enumerate(hows):
                ok, why = one_load(d, how, url, deadline)
                tally.add(phase, url, how, ok, why)
                errors.extend('%s %s #%d: %s' % (phase, url, i, e) for e in console_errors(d))
                if i % 2 == 1:
                    time.sleep(THINK_S)
    finally:
        d.quit()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('server')
    ap.add_argument('--port', choices=('http', 'game'), default='http')
    ap.add_argument('--legacy', action='store_true')
    ap.add_argument('--rounds', type=int, default=4)
    ap.add_argument('--deadline', type=float, default=15)
    ap.add_argument('--report-only', action='store_true')
    ap.add_argument('--attach', type=int, default=0,
                    help='load from this port of 127.0.0.1 instead of starting a server')
    a = ap.parse_args()
    kind = 'game' if a.legacy else a.port
    deadline = a.deadline * SLOWDOWN
    started = time.time()
    tally = Tally()
    errors = []
    try:
        port = a.attach or start_server(a.server, a.legacy)[kind]
        urls = ['http://127.0.0.1:%d/' % port, 'http://%s:%d/' % (HOST_NAME, port)]
        # Fresh profiles, as first visits: a browser just started is slow to
        # get to the requests of its first page, and it connects their
        # sockets ahead of them (that is where the game port lost loads).
        for i in range(a.rounds - 1):
            temp_dirs.append(tempfile.mkdtemp(prefix='race2048-chromium-'))
            session(tally, 'fresh', temp_dirs[-1], [urls[i % 2]],
                    ['get', 'reload', 'link', 'reload', 'link'], deadline, errors)
        # A warm one: a browser that knows the site, then another on the same
        # profile, whose predictor preconnects from the start.
        temp_dirs.append(tempfile.mkdtemp(prefix='race2048-chromium-'))
        warm = temp_dirs[-1]
        hows = ['get'] + ['reload', 'link'] * a.rounds
        session(tally, 'warm-1', warm, urls, hows, deadline, errors)
        session(tally, 'warm-2', warm, urls, hows, deadline, errors)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
        for t in temp_dirs:
            shutil.rmtree(t, ignore_errors=True)

    print('browser loads on %s:' % ('127.0.0.1:%d' % a.attach if a.attach else
                                    'the %s port%s' % (kind, ' (a server without --http-port)'
                                                       if a.legacy else '')))
    for phase in ('fresh', 'warm-1', 'warm-2'):
        for host in ('127.0.0.1', HOST_NAME):
            rows = [r for r in tally.rows if r[0] == phase and '//%s:' % host in r[1]]
            bad = [r for r in rows if not r[3]]
            print('  %-7s %-12s %3d loads, %d failed' % (phase, host, len(rows), len(bad)))
    bad = tally.failures()
    for r in bad:
        print('  FAILED %s %s (%s): %s' % (r[0], r[1], r[2], r[4]))
    for e in errors[:20]:
        print('  console: %s' % e)
    print('total: %d loads tried, %d failed, %d console errors, %.1f s' % (
        len(tally.rows), len(bad), len(errors), time.time() - started))
    if a.report_only:
        return
    if bad:
        raise SystemExit('%d of %d page loads never reached the name screen' % (
            len(bad), len(tally.rows)))
    if errors:
        raise SystemExit('console errors: %r' % errors[:5])


if __name__ == '__main__':
    main()
