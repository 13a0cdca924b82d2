#!/usr/bin/env python3
"""test_browser_accounts.py - issue 27 in a real headless Chromium against the real race2048d:
what players see of accounts.

A page enters as Ada and presses "Keep my name": the rating shows beside the name and the
key is kept in the browser's storage. A reload logs in by itself (the rating shows again,
nothing typed). Another page, a guest, races Ada in rated quick races (4x4) and leaves;
Ada's end screen shows her rating before and after. Before that Ada plays today's challenge
(the lobby's card) a few moves and leaves, and is on today's board there, as
/api/leaderboard?board=daily says; a guest's card says it needs "Keep my name". The leaderboard view (nobody has 10
rated races yet) and Ada's profile (rating as /api/profile/Ada says, races, wins, the
chart of her last races, recent games linking to /game/ID). "Forget me" clears the
storage and a reload is a guest's first screen. Screenshots of the profile at 1280x800 and
390x844 go to OUTDIR (profile-desktop.png, profile-phone.png: docs/web-profile*.png are
copies).

usage: test_browser_accounts.py RACE2048D OUTDIR
"""
import json
import re
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from browser_harness import *  # noqa: F401,F403 (the shared set-up)



def enter(d, url, name):
    d.get(url)
    wait(d, 'the first screen', shown('name'))
    box = d.find_element(By.ID, 'name')
    box.clear()
    box.send_keys(name)
    click(d, '#b-enter')
    wait(d, 'the lobby as ' + name, lambda d: shown('lobby')(d) and name in text_of(d, 'who'))


def rating_shown(d):
    m = re.search(r'rating (\d+)', text_of(d, 'who'))
    return int(m.group(1)) if m else None


def kept(d):
    return d.execute_script("return localStorage.getItem('race2048.account')")


def keep_my_name(d):
    """"Keep my name" registers: the rating beside the name, the key in storage."""
    click(d, '#b-keep')
    wait(d, 'the rating beside the name', lambda d: rating_shown(d) == 1500)
    k = json.loads(kept(d) or 'null')
    if not k or k.get('name') != 'Ada' or not re.fullmatch(r'[0-9a-f]{32}', k.get('key', '')):
        raise SystemExit('the browser did not keep name and key: %r' % kept(d))
    if d.find_element(By.ID, 'b-keep').is_displayed():
        raise SystemExit('"Keep my name" is still offered once the name is kept')
    return k['key']


def play_daily(d, http_port):
    """Today's challenge from the lobby: a few moves, leave; Ada is on today's board."""
    wait(d, "today's challenge offered", lambda d: d.find_element(By.ID, 'b-daily').is_enabled())
    click(d, '#b-daily')
    wait(d, "today's game", shown('game'))
    body = d.find_element(By.TAG_NAME, 'body')
    for k in (Keys.ARROW_LEFT, Keys.ARROW_DOWN, Keys.ARROW_RIGHT, Keys.ARROW_UP):
        body.send_keys(k)
    click(d, '#b-leave')
    wait(d, 'an end screen', lambda d: shown('end')(d) or shown('lobby')(d))
    if shown('end')(d):
        click(d, '#b-lobby')
    wait(d, "Ada on today's board", lambda d: shown('lobby')(d) and
         re.search(r'^1 Ada ', text_of(d, 'daily-rows'), re.M))
    api = json.load(urllib.request.urlopen(
        'http://127.0.0.1:%d/api/leaderboard?board=daily&size=4' % http_port))
    row = api['rows'][0]
    want = '1 Ada %d %d %d' % (row['score'], row['max_tile'], row['moves'])
    if text_of(d, 'daily-rows') != want:
        raise SystemExit("today's board shows %r, the api %r" % (text_of(d, 'daily-rows'), api))


def race_and_leave(a, b):
    """A rated quick race (2 players, 4x4): b leaves, a wins. Returns a's end-ratings text."""
    for d in (a, b):
        click(d, '#f-quick button[type=submit]')
    for d in (a, b):
        wait(d, 'the race', shown('game'))
    click(b, '#b-leave')
    wait(a, "the rating's change on the end screen",
         lambda d: shown('end')(d) and 'Your rating' in text_of(d, 'end-ratings'))
    text = text_of(a, 'end-ratings')
    for d in (a, b):
        wait(d, 'an end screen', lambda d: shown('end')(d) or shown('lobby')(d))
        if shown('end')(d):
            click(d, '#b-lobby')
        wait(d, 'the lobby', shown('lobby'))
    return text


def main():
    port, http_port = start_server()
    url = 'http://127.0.0.1:%d/' % http_port
    try:
        a = browser()
        enter(a, url, 'Ada')
        key = keep_my_name(a)
        # A reload logs in by itself with the kept key.
        a.get(url)
        wait(a, 'the lobby logged in by itself', lambda d: shown('lobby')(d) and rating_shown(d) == 1500)
        if key in a.find_element(By.TAG_NAME, 'body').text:
            raise SystemExit('the key is shown on the page')
        play_daily(a, http_port)
        b = browser()
        enter(b, url, 'Bob')
        # A guest is told that today's challenge needs a kept name.
        if b.find_element(By.ID, 'b-daily').is_enabled() or \
                'Keep my name' not in text_of(b, 'daily-note'):
            raise SystemExit("a guest's challenge card: %r" % text_of(b, 'daily-note'))
        first = race_and_leave(a, b)
        m = re.fullmatch(r'Your rating: 1500 → (\d+) \(\+(\d+)\)', first)
        if not m or int(m.group(1)) - 1500 != int(m.group(2)):
            raise SystemExit('the end screen says %r' % first)
        after = int(m.group(1))
        second = race_and_leave(a, b)
        if not second.startswith('Your rating: %d → ' % after):
            raise SystemExit('the second end screen says %r' % second)
        now = int(re.search(r'→ (\d+)', second).group(1))
        wait(a, 'the new rating beside the name', lambda d: rating_shown(d) == now)
        # The leaderboard (nobody is past provisional) and Ada's profile.
        click(a, '#b-top')
        wait(a, 'the leaderboard', lambda d: shown('board')(d) and
             'Nobody has 10 rated races yet' in text_of(d, 'top-rows'))
        wait(a, "Ada's profile", lambda d: text_of(d, 'h-profile') == 'Ada' and
             'Rating' in text_of(d, 'p-rating'))
        api = json.load(urllib.request.urlopen('http://127.0.0.1:%d/api/profile/Ada' % http_port))
        want = 'Rating %d (provisional)' % api['rating']['rating']
        if api['rating']['rating'] != now or text_of(a, 'p-rating') != want:
            raise SystemExit('profile %r, the api %r' % (text_of(a, 'p-rating'), api['rating']))
        if text_of(a, 'p-counts') != '2 rated races, 2 wins':
            raise SystemExit('the profile counts %r' % text_of(a, 'p-counts'))
        points = a.execute_script(
            "const l = document.querySelector('#p-chart polyline'); return l && l.getAttribute('points')")
        if not points or len(points.split()) != len(api['chart']) or len(api['chart']) < 2:
            raise SystemExit('the chart %r for %r' % (points, api['chart']))
        links = [e.get_attribute('href') for e in a.find_elements(By.CSS_SELECTOR, '#p-recent a')]
        if len(links) < 2 or not all(re.search(r'/game/%d$' % g, l) for g, l in zip(api['recent'], links)):
            raise SystemExit('recent games %r for %r' % (links, api['recent']))
        shoot(a, 'profile')
        check_console(a)
        # Forget me: the storage is cleared, a reload is a stranger's first screen.
        click(a, '#b-board-back')
        wait(a, 'the lobby', shown('lobby'))
        click(a, '#b-forget')
        wait(a, 'a guest again', lambda d: kept(d) is None and rating_shown(d) is None and
             'player-' in text_of(d, 'who'))
        a.get(url)
        wait(a, 'the first screen after forgetting', shown('name'))
        check_console(b)
        print('accounts in the browser: kept, logged in by itself, rated %d -> %d -> %d, '
              'profile and board shown, forgotten' % (1500, after, now))
    finally:
        clean_up()


if __name__ == '__main__':
    main()
