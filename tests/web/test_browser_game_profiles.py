#!/usr/bin/env python3
"""test_browser_game_profiles.py - issue 29: on a game's page (/game/ID) the players who were
accounts link to their profiles, in a real headless Chromium against the real race2048d.

Ada (an account, over JSON) races bo (a guest) and leaves; the game's link, opened in a fresh
profile, names Ada as a profile link and bo not; the link opens Ada's profile (the leaderboard
view), as /api/profile/Ada says it. A guest's solo game has no profile line at all.

usage: test_browser_game_profiles.py RACE2048D OUTDIR
"""
import json
import select
import socket
import time
import urllib.request

from selenium.webdriver.common.by import By

from browser_harness import *  # noqa: F401,F403 (the shared set-up)


class Client:
    """A JSON-lines client: send a message, wait for a type with a deadline."""

    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=20 * SLOWDOWN)
        self.buf = b''

    def send(self, msg):
        self.sock.sendall((json.dumps(msg) + '\n').encode())

    def listed(self):
        """The newest finished game `history` lists (once its record is written)."""
        deadline = time.monotonic() + 20 * SLOWDOWN
        while time.monotonic() < deadline:
            self.send({'type': 'history', 'limit': 1})
            games = self.expect('history')['games']
            if games:
                return games[0]
            time.sleep(0.05)  # a poll interval: the record is on its way to the journal
        raise SystemExit('history never listed the game')

    def play(self):
        """Moves until one moves the board (a game nobody moved in is not kept)."""
        for d in ('left', 'up', 'right', 'down'):
            self.send({'type': 'move', 'dir': d})
            if self.expect('state')['moves'] > 0:
                return

    def expect(self, kind):
        deadline = time.monotonic() + 20 * SLOWDOWN
        while True:
            while b'\n' not in self.buf:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                    raise SystemExit('no %s from the server in time' % kind)
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise SystemExit('the server closed the connection waiting for ' + kind)
                self.buf += chunk
            line, self.buf = self.buf.split(b'\n', 1)
            msg = json.loads(line)
            if msg.get('type') == kind:
                return msg
            if msg.get('type') == 'error':
                raise SystemExit('the server answered %r waiting for %s' % (msg, kind))


def a_race_ada_leaves(port):
    """Ada (registered) and bo (a guest) race; Ada leaves. Returns the game's id."""
    ada, bo = Client(port), Client(port)
    ada.send({'type': 'hello', 'name': 'Ada'})
    ada.expect('welcome')
    ada.send({'type': 'register'})
    ada.expect('registered')
    bo.send({'type': 'hello', 'name': 'bo'})
    bo.expect('welcome')
    ada.send({'type': 'create', 'players': 2, 'size': 3})
    room = ada.expect('room')['room']
    bo.send({'type': 'join', 'room': room})
    ada.expect('start')
    ada.play()
    ada.send({'type': 'leave'})
    ada.expect('end')
    game = ada.listed()
    if game.get('accounts') != {str(r['id']): 'Ada' for r in game['results'] if r['name'] == 'Ada'}:
        raise SystemExit('the record names its accounts as %r' % game.get('accounts'))
    return game['game']


def a_guest_solo(port):
    guest = Client(port)
    guest.send({'type': 'hello', 'name': 'cy'})
    guest.expect('welcome')
    guest.send({'type': 'solo', 'size': 3})
    guest.expect('start')
    guest.play()
    guest.send({'type': 'leave'})
    guest.expect('end')
    return guest.listed()['game']


def main():
    port, http_port = start_server()
    base = 'http://127.0.0.1:%d' % http_port
    started = time.time()
    try:
        raced, solo = a_race_ada_leaves(port), a_guest_solo(port)
        d = browser()
        d.get('%s/game/%d' % (base, raced))
        wait(d, 'the game page', lambda d: shown('replay')(d) and 'bo' in text_of(d, 'replay-info'))
        links = wait(d, 'the profile links', lambda d: d.find_elements(
            By.CSS_SELECTOR, '#replay-players button.profile-link'))
        names = [b.text for b in links]
        print('game %d: %s | %s' % (raced, text_of(d, 'replay-info'), text_of(d, 'replay-players')))
        if names != ['Ada']:
            raise SystemExit('the game page links %r to profiles (want Ada only)' % names)
        links[0].click()
        wait(d, "Ada's profile", lambda d: shown('board')(d) and text_of(d, 'h-profile') == 'Ada'
             and text_of(d, 'p-rating'))
        api = json.load(urllib.request.urlopen(base + '/api/profile/Ada'))
        if 'Rating %d' % api['rating']['rating'] not in text_of(d, 'p-rating'):
            raise SystemExit('the profile says %r, the api %r' % (text_of(d, 'p-rating'), api['rating']))
        if ('Game %d' % raced) not in text_of(d, 'p-recent'):
            raise SystemExit("Ada's recent games %r lack game %d" % (text_of(d, 'p-recent'), raced))
        # A guest's game: no profile line.
        d.get('%s/game/%d' % (base, solo))
        wait(d, 'the solo game page', lambda d: shown('replay')(d) and 'cy' in text_of(d, 'replay-info'))
        line = d.find_elements(By.ID, 'replay-players')
        if line and line[0].is_displayed():
            raise SystemExit("a guest's game shows profiles: %r" % line[0].text)
        check_console(d)
        print('browser game profiles test passed in %.1f s' % (time.time() - started))
    finally:
        clean_up()


if __name__ == '__main__':
    main()
