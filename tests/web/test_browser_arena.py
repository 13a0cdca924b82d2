#!/usr/bin/env python3
"""test_browser_arena.py - arenas in a real headless Chromium against the real race2048d:
page A makes a short arena on the first screen and enters it, page B finds it in the first
screen's list and joins, both race (keys, until the arena's time is up), the standings
update on both pages, and both show the final standings (a second arena beyond
--max-arenas 1 is refused beside the form); the arena page's own link
(#arena=CODE, the server serves no /arena/CODE page) opens them again in a fresh page.

The server runs with RACE2048_TEST_ARENA_SCALE=20 (tests/server/test_server_arena.c): a
5-minute arena lasts 15 s and "starts in 5 min" is 15 s, time enough for B to join first.
Screenshots at 1280x800 go to OUTDIR (arena-standings.png during the race,
arena-final.png at the end: docs/arena-*.png are copies).

usage: test_browser_arena.py RACE2048D OUTDIR
"""
import os
import re
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from browser_harness import *  # noqa: F401,F403 (the shared set-up)

SCALE = 20


def start_arena_server():
    return start_server('--max-arenas', '1', env={'RACE2048_TEST_ARENA_SCALE': str(SCALE)})


def standings(d):
    """The arena page's rows as the page has them: [(name, points, races)]."""
    return d.execute_script(
        'const a = app.arena && app.arena.a; return a ? (a.standings || []).map('
        '(r) => [r.name, r.points, r.races]) : []')


def arena_js(d, expr):
    return d.execute_script('const a = app.arena && app.arena.a; return a ? ' + expr + ' : null')


def main():
    port, http_port = start_arena_server()
    url = 'http://127.0.0.1:%d/' % http_port
    try:
        a, b = browser(), browser()
        for d in (a, b):
            d.get(url)
            wait(d, 'the first screen', lambda d: shown('name')(d) and
                 'No arena right now' in text_of(d, 'arenas'))

        # A: a name, then "New arena" (5 minutes, races of 2, starting in 5 minutes).
        a.find_element(By.ID, 'name').send_keys('ann')
        f = a.find_element(By.ID, 'f-arena')
        name = f.find_element(By.NAME, 'name')
        name.clear()
        name.send_keys('Friday cup')
        Select(f.find_element(By.NAME, 'minutes')).select_by_visible_text('5')
        Select(f.find_element(By.NAME, 'players')).select_by_visible_text('2')
        Select(f.find_element(By.NAME, 'starts_in')).select_by_visible_text('in 5 min')
        a.find_element(By.ID, 'b-arena-new').click()
        wait(a, 'the new arena page', lambda d: shown('arena')(d) and
             'Friday cup' in text_of(d, 'h-arena') and 'Starts in' in text_of(d, 'arena-clock'))
        code = arena_js(a, 'a.arena')
        if not re.match(r'^[A-Z0-9]+$', code or ''):
            raise SystemExit('no arena code: %r' % code)
        if not a.current_url.endswith('#arena=' + code):
            raise SystemExit('the page link is %s' % a.current_url)
        a.find_element(By.ID, 'b-arena-join').click()
        wait(a, "ann's row", lambda d: 'rank 1' in text_of(d, 'arena-you') and
             'ann (you)' in text_of(d, 'arena-rows'))

        # B finds it on the first screen (loaded again: the list comes on connecting, not
        # only every 5 s, so that B is in well before the start) and joins.
        b.get(url)
        wait(b, 'the first screen again', shown('name'))
        b.find_element(By.ID, 'name').send_keys('bob')
        row = '#arenas li[data-arena="%s"]' % code
        wait(b, 'the arena in the list', lambda d: d.find_elements(By.CSS_SELECTOR, row) and
             'Friday cup' in d.find_element(By.CSS_SELECTOR, row).text and
             'upcoming' in d.find_element(By.CSS_SELECTOR, row).text)
        # --max-arenas 1: a second arena is refused, and the page says so in the form.
        b.find_element(By.ID, 'b-arena-new').click()
        wait(b, 'the refusal beside "New arena"', lambda d: d.find_elements(
            By.CSS_SELECTOR, '#f-arena #error:not([hidden])') and shown('name')(d))
        print('refused: %r' % text_of(b, 'error'))
        b.find_element(By.XPATH, '//li[@data-arena="%s"]//button[text()="Join"]' % code).click()
        wait(b, "bob's arena page", lambda d: shown('arena')(d) and
             'bob (you)' in text_of(d, 'arena-rows') and 'ann' in text_of(d, 'arena-rows'))
        # A's standings update: bob is in them.
        wait(a, 'bob in ann\'s standings', lambda d: 'bob' in text_of(d, 'arena-rows'))
        print('both entered arena %s before its start' % code)

        # The start: A and B race each other (races of 2); play by keys until the end.
        for d, who in ((a, 'ann'), (b, 'bob')):
            wait(d, who + "'s race", lambda d: shown('game')(d) and
                 d.execute_script('return !!(app.game && app.game.arena)'), secs=40)
        names = sorted(a.execute_script('return [...app.game.views.values()].map((v) => v.p.name)'))
        if names != ['ann', 'bob']:
            raise SystemExit('the race is %r' % names)
        keys = [Keys.LEFT, Keys.UP, Keys.RIGHT, Keys.DOWN]
        shot = False
        races = {id(a): 0, id(b): 0}
        deadline = time.time() + 60 * SLOWDOWN
        while time.time() < deadline:
            done = 0
            for d in (a, b):
                if arena_js(d, "a.status === 'finished'"):
                    done += 1
                    continue
                if shown('game')(d) and d.execute_script('return !!(app.game && !app.game.ended)'):
                    body = d.find_element(By.TAG_NAME, 'body')
                    for k in keys:
                        body.send_keys(k)
            if done == 2:
                break
            if not shot and a.execute_script(
                    'return !!(app.game && app.game.views.size && '
                    '[...app.game.views.values()].every((v) => v.p.score > 0))'):
                # The standings during the race, one click from the race and back.
                a.find_element(By.ID, 'b-game-arena').click()
                wait(a, 'the arena page during the race', lambda d: shown('arena')(d) and
                     not d.find_element(By.ID, 'b-arena-race').get_attribute('hidden'))
                a.execute_script('window.scrollTo(0, 0)')
                a.save_screenshot(os.path.join(OUT, 'arena-standings.png'))
                a.find_element(By.ID, 'b-arena-race').click()
                wait(a, 'the race again', shown('game'))
                shot = True
        else:
            raise SystemExit('the arena did not finish; A: %r, B: %r' %
                             (text_of(a, 'arena-clock'), text_of(b, 'arena-clock')))

        # Final standings on both: both names, a race each, the winner's points.
        for d, who in ((a, 'ann'), (b, 'bob')):
            wait(d, who + "'s final standings", lambda d: shown('arena')(d) and
                 text_of(d, 'h-standings') == 'Final standings' and
                 text_of(d, 'arena-clock') == 'Finished')
            rows = standings(d)
            if sorted(r[0] for r in rows) != ['ann', 'bob'] or any(r[2] < 1 for r in rows) or \
                    rows[0][1] < 1:
                raise SystemExit('%s: final standings %r' % (who, rows))
            updates = d.execute_script('return app.arena.updates')
            if updates < 3:
                raise SystemExit('%s saw %d arena updates' % (who, updates))
            if 'You: rank' not in text_of(d, 'arena-you') or \
                    not d.find_element(By.ID, 'b-arena-join').get_attribute('hidden') is not None:
                raise SystemExit('%s: %r' % (who, text_of(d, 'arena-you')))
            print('%s: %s | %d updates | %s' % (who, text_of(d, 'arena-you'), updates, rows))
        if not shot:
            raise SystemExit('no score during the race: no standings screenshot')
        a.execute_script('window.scrollTo(0, 0)')
        a.save_screenshot(os.path.join(OUT, 'arena-final.png'))

        # The page's own link opens the final standings in a fresh page.
        c = browser()
        c.get(url + '#arena=' + code)
        wait(c, 'the final standings from the link', lambda d: shown('arena')(d) and
             text_of(d, 'h-standings') == 'Final standings' and
             'ann' in text_of(d, 'arena-rows') and 'bob' in text_of(d, 'arena-rows'))
        for d in (a, b, c):
            errors = [e for e in d.get_log('browser') if e['level'] == 'SEVERE']
            if errors:
                raise SystemExit('console errors: %r' % errors)
        print('ok')
    finally:
        clean_up()


if __name__ == '__main__':
    main()
