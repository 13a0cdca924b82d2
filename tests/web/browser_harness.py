"""browser_harness.py - what the browser tests share: the server they start, headless
Chromium with a fresh profile, waits with a deadline, and screenshots at desktop and phone
sizes. A test runs as `TEST.py RACE2048D [ITS OWN ARGUMENTS] OUTDIR` and does
`from browser_harness import *`.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

SERVER, OUT = sys.argv[1], sys.argv[-1]
os.makedirs(OUT, exist_ok=True)
# The test's short name: its temp folders and its failure screenshot (NAME-failure.png);
# test_browser.py's is `web`.
NAME = re.sub(r'^test_browser_?', '', os.path.splitext(os.path.basename(sys.argv[0]))[0]) or 'web'
SLOWDOWN = float(os.environ.get('RACE2048_TEST_SLOWDOWN', '1'))
DESKTOP = (1280, 800)
PHONE = (390, 844)
procs, temp_dirs, drivers = [], [], []
journals = []  # each server's journal, in the order they started


def start_server(*extra, env=None):
    """race2048d on free ports with a journal of its own, plus the flags `extra` and the
    environment variables `env`: its game and browsers' ports."""
    temp_dirs.append(tempfile.mkdtemp(prefix='race2048-%s-' % NAME))
    journals.append(os.path.join(temp_dirs[-1], 'race2048.journal'))
    p = subprocess.Popen([SERVER, '--host', '127.0.0.1', '--port', '0', '--http-port', '0',
                          '--log-level', 'warn', *extra, '--journal', journals[-1]],
                         stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, **env) if env else None)
    procs.append(p)
    ports = []
    for want in ('listening on', 'http on'):
        line = p.stdout.readline()
        m = re.search(r'^race2048d %s .*:(\d+)$' % want, line.strip())
        if not m:
            raise SystemExit('race2048d did not say where it listens (%s): %r' % (want, line))
        ports.append(int(m.group(1)))
    return ports


def browser(*flags):
    """Headless Chromium with a fresh profile, plus the Chromium flags `flags`."""
    opts = webdriver.ChromeOptions()
    for flag in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
                 '--no-first-run', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
                 '--window-size=1280,800', *flags):
        opts.add_argument(flag)
    temp_dirs.append(tempfile.mkdtemp(prefix='race2048-chromium-'))  # a fresh profile
    opts.add_argument('--user-data-dir=' + temp_dirs[-1])
    opts.binary_location = shutil.which('chromium') or '/usr/bin/chromium'
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    d = webdriver.Chrome(service=Service(shutil.which('chromedriver') or '/usr/bin/chromedriver'),
                         options=opts)
    drivers.append(d)
    viewport(d, DESKTOP)
    return d


def viewport(d, size):
    d.execute_cdp_cmd('Emulation.setDeviceMetricsOverride',
                      {'width': size[0], 'height': size[1], 'deviceScaleFactor': 1,
                       'mobile': size == PHONE})


def wait(d, what, cond, secs=20):
    try:
        # The page redraws labels by replacing their elements: one found just before
        # a redraw is stale, and is looked up again at the next poll.
        return WebDriverWait(d, secs * SLOWDOWN, poll_frequency=0.05,
                             ignored_exceptions=[StaleElementReferenceException]).until(
                                 lambda d: cond(d))
    except Exception:
        d.save_screenshot(os.path.join(OUT, NAME + '-failure.png'))
        print('page log: %r' % d.get_log('browser'))
        raise SystemExit('timed out waiting for ' + what + '; page says: ' +
                         d.find_element(By.TAG_NAME, 'body').text[:600])


def shown(view):
    return lambda d: d.find_element(By.ID, 'v-' + view).get_attribute('hidden') is None


def text_of(d, id_):
    return d.find_element(By.ID, id_).text


def click(d, css):
    d.find_element(By.CSS_SELECTOR, css).click()


def check_console(d):
    errors = [e for e in d.get_log('browser') if e['level'] == 'SEVERE']
    if errors:
        raise SystemExit('console errors: %r' % errors)


def fits_width(d, size):
    over = d.execute_script("""
        const w = document.documentElement.clientWidth, out = [];
        if (document.documentElement.scrollWidth > w) out.push('page ' + document.documentElement.scrollWidth);
        for (const el of document.querySelectorAll('.view:not([hidden]) *'))
            if (el.getBoundingClientRect().right > w + 1 && el.offsetParent) out.push(el.tagName + '#' + el.id + '.' + el.className);
        return out.slice(0, 5);""")
    if over:
        raise SystemExit('wider than the screen at %dx%d: %r' % (size + (over,)))


def still(css):
    """No animation runs under css: a screenshot shows whole tiles."""
    return lambda d: d.execute_script(
        'return document.querySelector(arguments[0]).getAnimations({subtree: true}).length === 0',
        css)


def shoot(d, name, check=fits_width, still_css='body', scroll_to=None):
    """NAME-desktop.png and NAME-phone.png, each once no animation runs under still_css;
    check(d, size) runs at each size; scroll_to (a CSS selector) is brought into view
    first. Back at the desktop size afterwards."""
    for size, tag in ((DESKTOP, 'desktop'), (PHONE, 'phone')):
        viewport(d, size)
        d.execute_script('window.scrollTo(0, 0)')
        if scroll_to:
            d.execute_script(
                "document.querySelector(arguments[0]).scrollIntoView({block: 'center'})",
                scroll_to)
        wait(d, 'a still page', still(still_css))
        if check:
            check(d, size)
        d.save_screenshot(os.path.join(OUT, '%s-%s.png' % (name, tag)))
    viewport(d, DESKTOP)


def clean_up():
    """Quits every browser, stops every server, removes every temp folder."""
    for d in drivers:
        d.quit()
    for p in procs:
        if p.poll() is None:
            p.terminate()
            t0 = time.time()
            p.wait(timeout=30)
            print('server stopped in %.1f s' % (time.time() - t0))
    for t in temp_dirs:
        shutil.rmtree(t, ignore_errors=True)
