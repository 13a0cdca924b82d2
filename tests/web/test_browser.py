#!/usr/bin/env python3
"""test_browser.py - a real browser (Debian's headless Chromium through chromedriver and
python3-selenium) plays the web client against the real race2048d: a solo game to its
end with the keyboard, then a race against race2048-bot, checking that the page shows the
opponent's board changing, resumes by itself when its socket drops, and says the game
verified. Screenshots (1280x800 and 390x844)
are kept in the build directory. Any console error fails the test.

usage: test_browser.py RACE2048D RACE2048_BOT OUTDIR
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

SERVER, BOT, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(OUT, exist_ok=True)
procs = []
temp_dirs = []
# Like the C tests' harness: every deadline times RACE2048_TEST_SLOWDOWN.
SLOWDOWN = float(os.environ.get('RACE2048_TEST_SLOWDOWN', '1'))


def start_server():
    # A fresh journal each run, so the recent games are this run's.
    temp_dirs.append(tempfile.mkdtemp(prefix='race2048-web-'))
    journal = os.path.join(temp_dirs[-1], 'race2048.journal')
    # The page from --http-port, as the README sends browsers (a free one:
    # tests run in parallel); programs and netcat use the game port.
    p = subprocess.Popen([SERVER, '--host', '127.0.0.1', '--port', '0', '--http-port', '0',
                          '--log-level', 'warn', '--journal', journal],
                         stdout=subprocess.PIPE, text=True)
    procs.append(p)
    ports = []
    for want in ('listening on', 'http on'):
        line = p.stdout.readline()
        m = re.search(r'^race2048d %s .*:(\d+)$' % want, line.strip())
        if not m:
            raise SystemExit('race2048d did not say where it listens (%s): %r' % (want, line))
        ports.append(int(m.group(1)))
    return ports


def browser():
    opts = webdriver.ChromeOptions()
    for flag in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
                 '--no-first-run', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
                 '--window-size=1280,800'):
        opts.add_argument(flag)
    temp_dirs.append(tempfile.mkdtemp(prefix='race2048-chromium-'))
    opts.add_argument('--user-data-dir=' + temp_dirs[-1])
    opts.binary_location = shutil.which('chromium') or '/usr/bin/chromium'
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    driver_path = shutil.which('chromedriver') or '/usr/bin/chromedriver'
    return webdriver.Chrome(service=Service(driver_path), options=opts)


def wait(driver, what, cond, secs=20):
    try:
        return WebDriverWait(driver, secs * SLOWDOWN, poll_frequency=0.05).until(
            lambda d: cond(d))
    except Exception:
        driver.save_screenshot(os.path.join(OUT, 'failure.png'))
        raise SystemExit('timed out waiting for ' + what + '; page says: ' +
                         driver.find_element(By.TAG_NAME, 'body').text[:600])


def visible(driver, view):
    return not driver.find_element(By.ID, 'v-' + view).get_attribute('hidden') is not None


def shown(view):
    return lambda d: d.find_element(By.ID, 'v-' + view).get_attribute('hidden') is None


def check_console(driver):
    errors = [e for e in driver.get_log('browser') if e['level'] == 'SEVERE']
    if errors:
        raise SystemExit('console errors: %r' % errors)


def tiles(driver, css):
    """The tiles under css as sorted [row, col, value] lists, read in one go (tiles
    come and go while a board animates)."""
    return driver.execute_script("""
        return Array.from(document.querySelectorAll(arguments[0] + ' .tile:not(.dying)'),
            (t) => [t.style.getPropertyValue('--r'), t.style.getPropertyValue('--c'),
                    t.textContent]).sort();""", css)


def my_moves(driver):
    """The move count on our own board's label."""
    text = driver.find_element(By.CSS_SELECTOR, '#me .label b').text
    return int(re.search(r'(\d+) moves', text).group(1))


def swipe(driver, x, y, dx, dy):
    """A one-finger swipe by (dx, dy) from (x, y), as a phone sends it."""
    for kind, px, py in (('touchStart', x, y), ('touchMove', x + dx / 2, y + dy / 2),
                         ('touchMove', x + dx, y + dy)):
        driver.execute_cdp_cmd('Input.dispatchTouchEvent',
                               {'type': kind, 'touchPoints': [{'x': px, 'y': py}]})
    driver.execute_cdp_cmd('Input.dispatchTouchEvent', {'type': 'touchEnd', 'touchPoints': []})


def drop_all(sock):
    """Reads and drops everything until the socket closes."""
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def settled(driver):
    """No animation runs on our board: a screenshot shows whole tiles."""
    return driver.execute_script(
        "return document.getElementById('me').getAnimations({subtree: true}).length === 0")


def press_until_end(driver, limit_s):
    keys = [Keys.ARROW_LEFT, Keys.ARROW_DOWN, Keys.ARROW_RIGHT, Keys.ARROW_DOWN, 'a', 's', 'd', 'w',
            Keys.ARROW_UP]
    body = driver.find_element(By.TAG_NAME, 'body')
    deadline = time.time() + limit_s * SLOWDOWN
    i = 0
    while time.time() < deadline:
        if driver.find_element(By.ID, 'v-end').get_attribute('hidden') is None:
            return True
        body.send_keys(keys[i % len(keys)])
        i += 1
    return False


def main():
    port, http_port = start_server()
    url = 'http://127.0.0.1:%d/' % http_port
    d = browser()
    try:
        started = time.time()
        d.get(url)
        wait(d, 'the name form', shown('name'))
        d.find_element(By.ID, 'name').send_keys('browser')
        d.find_element(By.CSS_SELECTOR, '#f-name button').click()
        wait(d, 'the lobby', shown('lobby'))
        d.save_screenshot(os.path.join(OUT, 'lobby-desktop.png'))

        # A solo game on a 3x3 board, played to its end with the keyboard.
        d.find_element(By.CSS_SELECTOR, '#f-solo select[name=size]').send_keys('3')
        d.find_element(By.CSS_SELECTOR, '#f-solo button').click()
        wait(d, 'the solo game', shown('game'))
        if not press_until_end(d, 40):
            raise SystemExit('the solo game did not end')
        verdict = wait(d, 'the verification', lambda d: d.find_element(By.ID, 'verify').text)
        print('solo:', verdict)
        if 'verified: this game was fair' not in verdict:
            raise SystemExit('solo game not verified: ' + verdict)
        check_console(d)
        solo_end = tiles(d, '#end-boards')
        # The record the protocol's `replay` describes, made from what the page saw.
        d.execute_script("""
            const g = app.game, e = app.lastEnd;
            window.ownRecord = {type: 'replay', game: 1, size: g.size, target: g.target,
                seed: e.seed, salt: e.salt, commit: g.commit, reason: e.reason,
                winner: e.winner, results: e.results,
                moves: {[g.you]: g.moves.map((m) => m.dir[0]).join('')}};""")

        # The game is in the recent games; its replay, stepped to the last
        # move, ends on the board the game ended on.
        d.find_element(By.ID, 'b-lobby').click()
        wait(d, 'the lobby again', shown('lobby'))
        wait(d, 'the recent games', lambda d: d.find_elements(By.CSS_SELECTOR, '#history button')
             or 'not available' in d.find_element(By.ID, 'history').text)
        replays = d.find_elements(By.CSS_SELECTOR, '#history button')
        if replays:
            replays[0].click()
        else:
            # A server without a journal: the viewer gets the page's own record.
            print('replay: this server keeps no history; replaying the page\'s own record')
            d.execute_script('handle(window.ownRecord)')
        wait(d, 'the replay', shown('replay'))
        d.find_element(By.ID, 'r-last').click()
        print('replay:', d.find_element(By.ID, 'r-pos').text)
        wait(d, 'the replayed board', lambda d: tiles(d, '#replay-boards') == solo_end)
        # The engine's score at the last move is the one the game ended with.
        solo_score = d.execute_script('return window.ownRecord.results[0].score')
        label = d.find_element(By.CSS_SELECTOR, '#replay-boards .label b').text
        if not label.startswith('%d pts' % solo_score):
            raise SystemExit('replay score %r, the game ended with %d' % (label, solo_score))
        d.find_element(By.ID, 'r-first').click()
        d.find_element(By.ID, 'r-play').click()
        wait(d, 'the replay to play to its end', lambda d: tiles(d, '#replay-boards') == solo_end)
        d.find_element(By.ID, 'b-replay-back').click()
        wait(d, 'the lobby after the replay', shown('lobby'))
        # A race of three: the browser, race2048-bot over JSON, and a person on
        # netcat (text mode) in the same room.
        form = '#f-create '
        d.find_element(By.CSS_SELECTOR, form + 'select[name=players]').send_keys('3')
        d.find_element(By.CSS_SELECTOR, form + 'select[name=target]').send_keys('256')
        d.find_element(By.CSS_SELECTOR, form + 'button').click()
        wait(d, 'the room', shown('wait'))
        code = re.search(r'Room ([A-Z0-9]+)', d.find_element(By.ID, 'wait-text').text).group(1)
        nc = socket.create_connection(('127.0.0.1', port))
        nc.sendall(('name netcat\r\njoin %s\r\n' % code).encode())
        # netcat shows what it gets; here it is read and dropped.
        threading.Thread(target=drop_all, args=(nc,), daemon=True).start()
        wait(d, 'netcat in the room', lambda d: 'netcat' in d.find_element(By.ID, 'v-wait').text)
        bot = subprocess.Popen([BOT, '--port', str(port), '--name', 'tcpbot', '--join', code,
                                '--games', '1', '--delay-ms', '100', '--strategy', 'greedy'],
                               stdout=subprocess.PIPE, text=True)
        procs.append(bot)
        wait(d, 'the race', shown('game'))
        netcat_board = '#others .player:nth-child(%d)' % (
            1 + [e.text.split()[0] for e in d.find_elements(By.CSS_SELECTOR, '#others .label')]
            .index('netcat'))
        before = tiles(d, netcat_board)
        nc.sendall(b'asdw\r\n')  # a line of four moves, as a netcat user types them
        wait(d, "netcat's board to change", lambda d: tiles(d, netcat_board) != before)
        before = tiles(d, '#others')
        wait(d, "the bot's board to change", lambda d: tiles(d, '#others') != before)
        # The socket drops: the page resumes with its token by itself and says so.
        d.execute_script('app.ws.close()')
        wait(d, 'the page to resume',
             lambda d: 'Reconnected: your game goes on' in d.find_element(By.ID, 'conn').text)
        before = tiles(d, '#others')
        wait(d, "the bot's board to change after the resume",
             lambda d: tiles(d, '#others') != before)
        body = d.find_element(By.TAG_NAME, 'body')
        for k in [Keys.ARROW_LEFT, Keys.ARROW_DOWN, Keys.ARROW_RIGHT, Keys.ARROW_DOWN] * 3:
            body.send_keys(k)
        # The bot moves on meanwhile; shoot between its animations.
        wait(d, 'a still board', settled)
        d.save_screenshot(os.path.join(OUT, 'race-desktop.png'))
        d.execute_cdp_cmd('Emulation.setDeviceMetricsOverride',
                          {'width': 390, 'height': 844, 'deviceScaleFactor': 1, 'mobile': True})
        wait(d, 'a still board', settled)
        d.save_screenshot(os.path.join(OUT, 'race-phone.png'))
        # On the phone, swipes move: some direction changes the board.
        d.execute_cdp_cmd('Emulation.setTouchEmulationEnabled', {'enabled': True})
        moves_before = my_moves(d)
        box = d.execute_script(
            "const r = document.querySelector('#me .board').getBoundingClientRect();"
            "return [r.x + r.width / 2, r.y + r.height / 2];")
        for dx, dy in ((-120, 0), (0, 120), (120, 0), (0, -120)):
            swipe(d, box[0], box[1], dx, dy)
            try:
                WebDriverWait(d, 2, poll_frequency=0.05).until(
                    lambda d: my_moves(d) > moves_before)
                break
            except Exception:
                continue  # that direction changed nothing: try the next
        if my_moves(d) <= moves_before:
            raise SystemExit('no swipe moved the board')
        d.execute_cdp_cmd('Emulation.setTouchEmulationEnabled', {'enabled': False})
        d.execute_cdp_cmd('Emulation.clearDeviceMetricsOverride', {})
        # netcat walks away (it would otherwise stay `playing` for ever, and a race where
        # the browser and the bot are both stuck before 256 could never end).
        nc.sendall(b'leave\r\n')
        if not press_until_end(d, 60):
            raise SystemExit('the race did not end')
        verdict = wait(d, 'the race verification', lambda d: d.find_element(By.ID, 'verify').text)
        print('race:', d.find_element(By.ID, 'end-reason').text, '|', verdict)
        if 'verified: this game was fair' not in verdict:
            raise SystemExit('race not verified: ' + verdict)
        out, _ = bot.communicate(timeout=30)
        print('bot:', out.strip())
        d.save_screenshot(os.path.join(OUT, 'end-desktop.png'))
        check_console(d)
        nc.close()
        print('browser test passed in %.1f s; screenshots in %s' % (time.time() - started, OUT))
    finally:
        d.quit()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
        for t in temp_dirs:
            shutil.rmtree(t, ignore_errors=True)


if __name__ == '__main__':
    main()
