#!/usr/bin/env python3
"""test_browser_watch.py - "Watch what is on" in a real headless Chromium against the real
race2048d: the first screen lists the running races with their players, Watch opens one,
and TV follows the most watched race and moves on to the next when it ends.

Two races, each kept alive by a person (a JSON client of this test on the game port): ann
against bob, watched by a spectator of this test, and cy against a level-1 bot. The first
screen shows both with their names and scores; Watch opens ann's. TV then shows ann's race
(the most watched); ann leaves, the race ends (bob wins by forfeit), and TV moves on to cy's
race; Esc goes back to the first screen. A screenshot of the first screen at 1280x800 goes
to OUTDIR/web-watch.png (docs/web-watch.png is a copy).

usage: test_browser_watch.py RACE2048D OUTDIR
"""
import json
import os
import re
import socket
import threading
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from browser_harness import *  # noqa: F401,F403 (the shared set-up)


class Client:
    """A JSON-mode client on the game port; a thread keeps every message it gets."""

    def __init__(self, port, name):
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.got, self.cond = [], threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(type='hello', name=name)
        self.id = self.expect('welcome')['id']

    def _read(self):
        buf = b''
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b''
            if not data:
                return
            buf += data
            *lines, buf = buf.split(b'\n')
            with self.cond:
                self.got += [json.loads(l) for l in lines if l.startswith(b'{')]
                self.cond.notify_all()

    def send(self, **msg):
        self.sock.sendall((json.dumps(msg) + '\n').encode())

    def expect(self, type_, secs=10):
        """The first message of that type not yet taken (earlier others are dropped)."""
        deadline = time.time() + secs * SLOWDOWN
        with self.cond:
            while True:
                for i, m in enumerate(self.got):
                    if m['type'] == type_:
                        del self.got[:i + 1]
                        return m
                    if m['type'] == 'error':
                        raise SystemExit('%s: error %r' % (type_, m))
                if not self.cond.wait(max(0, deadline - time.time())):
                    raise SystemExit('no %s came' % type_)

    def move_until_scored(self):
        for _ in range(100):
            for d in ('left', 'up', 'right', 'down'):
                self.send(type='move', dir=d, seq=1)
                st = self.expect_state()
                if st['score'] > 0:
                    return st['score']
        raise SystemExit('no score')

    def expect_state(self):
        while True:
            st = self.expect('state')
            if st['id'] == self.id:
                return st


def row_text(d, code):
    rows = d.find_elements(By.CSS_SELECTOR, '#first-rooms li[data-room="%s"]' % code)
    return rows[0].text if rows else ''


def board_names(d):
    return d.execute_script('return app.game ? [...app.game.views.values()].map((v) => v.p.name) : []')


def phone(d):
    """The first screen at 390x844 fits the width (OUTDIR/web-watch-phone.png)."""
    viewport(d, PHONE)
    over = d.execute_script(
        'return document.documentElement.scrollWidth > document.documentElement.clientWidth')
    d.save_screenshot(os.path.join(OUT, 'web-watch-phone.png'))
    viewport(d, DESKTOP)
    if over:
        raise SystemExit('the first screen is wider than a phone')


def race(port, first, second=None):
    """A running race of first and second (or a level-1 bot): its code and clients."""
    a = Client(port, first)
    if second:
        a.send(type='create', players=2)
        code = a.expect('room')['room']
        b = Client(port, second)
        b.send(type='join', room=code)
        b.expect('start')
    else:
        a.send(type='create', players=2, bots=1, level=1)
        b = None
    code = a.expect('start')['room']
    return code, a, b


def main():
    port, http_port = start_server()
    url = 'http://127.0.0.1:%d/' % http_port
    try:
        code_a, ann, bob = race(port, 'ann', 'bob')
        score = ann.move_until_scored()
        spy = Client(port, 'spy')  # ann's race is the most watched
        spy.send(type='watch', room=code_a)
        spy.expect('start')
        code_b, cy, _ = race(port, 'cy')

        d = browser()
        d.get(url)
        wait(d, 'the first screen', shown('name'))
        # Both races, with who is in them; ann's score once the list catches up.
        wait(d, "ann's race with names and score", lambda d: re.search(
            r'ann %d vs bob \d+' % score, row_text(d, code_a)) and
             '1 watching' in row_text(d, code_a))
        wait(d, "cy's race", lambda d: re.search(r'cy \d+ vs bot-L1', row_text(d, code_b)))
        print('first screen: %r | %r' % (row_text(d, code_a), row_text(d, code_b)))
        d.execute_script('window.scrollTo(0, 0)')
        wait(d, 'a still page', lambda d: d.execute_script(
            'return document.body.getAnimations({subtree: true}).length === 0'))
        d.save_screenshot(os.path.join(OUT, 'web-watch.png'))
        phone(d)

        # Watch opens that race: its boards, by name.
        d.find_element(By.XPATH, '//li[@data-room="%s"]//button[text()="Watch"]' % code_a).click()
        wait(d, "ann's race watched", lambda d: shown('game')(d) and
             text_of(d, 'h-game') == 'Watching Race ' + code_a and
             sorted(board_names(d)) == ['ann', 'bob'])
        d.get(url)  # a fresh page: the first screen again (no name was typed)
        wait(d, 'the first screen again', lambda d: shown('name')(d) and row_text(d, code_a))

        # TV: the most watched race (ann's: spy and nobody else), large.
        d.find_element(By.ID, 'b-tv').click()
        wait(d, "TV on ann's race", lambda d: text_of(d, 'h-game') == 'TV · race ' + code_a and
             sorted(board_names(d)) == ['ann', 'bob'])
        width = d.execute_script(
            "return document.querySelector('#others .player').getBoundingClientRect().width")
        if width < 380:
            raise SystemExit('TV boards are %d px wide' % width)
        for d_ in ('left', 'up', 'right', 'down'):  # live: a move shows on TV (one of
            ann.send(type='move', dir=d_)           # these changes the board)
        wait(d, "ann's moves on TV", lambda d: d.execute_script(
            "return [...app.game.views.values()].some((v) => v.p.name === 'ann' && v.p.moves > 0)"))
        # ann leaves: bob wins by forfeit; TV says so, then moves on to cy's race.
        ann.send(type='leave')
        ended = time.time()
        wait(d, 'the result on TV', lambda d: 'bob won' in text_of(d, 'tv-bar'))
        wait(d, "TV on cy's race", lambda d: text_of(d, 'h-game') == 'TV · race ' + code_b and
             'cy' in board_names(d), secs=30)
        print('TV moved on after %.1f s: %r' % (time.time() - ended, text_of(d, 'tv-bar')))
        d.save_screenshot(os.path.join(OUT, 'web-tv.png'))
        # Esc leaves TV.
        d.find_element(By.TAG_NAME, 'body').send_keys(Keys.ESCAPE)
        wait(d, 'the first screen after TV', shown('name'))
        check_console(d)
        for c in (ann, bob, spy, cy):
            c.sock.close()
        print('ok')
    finally:
        clean_up()


if __name__ == '__main__':
    main()
