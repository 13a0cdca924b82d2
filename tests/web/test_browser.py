#!/usr/bin/env python3
"""test_browser.py - a real browser (Debian's headless Chromium through chromedriver and
python3-selenium) plays the web client against the real race2048d: the first screen (what
race2048 is, the open rooms, a race at once), an error shown where it was caused, a solo
game to its end with the keyboard and its replay, watching a race, races against the
server's own bots from the first screen and the lobby (the bot's board changes, a marker by
its name on the waiting, race and end screens; won to a small target, then a rematch left:
a forfeit the bot wins), a race against race2048-bot and a netcat player (the page shows
the opponents' boards changing, resumes by
itself when its socket drops, says the game verified), and a rematch that says whom it
waits for. Layout checks at 1280x800 and 390x844 (labels never wrap, the end screen fits a
phone), with screenshots of every screen at both sizes kept in the build directory. Any
console error fails the test.

The analysis of a replayed game ("where did I lose?") runs in the page and marks the same
three biggest mistakes as race2048-replay --analyse on the server's journal.

usage: test_browser.py RACE2048D RACE2048_BOT RACE2048_REPLAY OUTDIR
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from browser_harness import *  # noqa: F401,F403 (the shared set-up)

BOT, REPLAY = sys.argv[2], sys.argv[3]


class JsonClient:
    """A program speaking JSON lines to the game port (as race2048-bot does)."""

    def __init__(self, port, name):
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.file = self.sock.makefile('rb')
        self.send({'type': 'hello', 'name': name})
        self.expect('welcome')

    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + '\n').encode())

    def expect(self, kind, secs=10):
        """The next message of this type; others are skipped."""
        self.sock.settimeout(secs * SLOWDOWN)
        while True:
            line = self.file.readline()
            if not line:
                raise SystemExit('the server closed a JSON client waiting for ' + kind)
            m = json.loads(line)
            if m['type'] == kind:
                return m
            if m['type'] == 'error':
                raise SystemExit('JSON client waiting for %s got %r' % (kind, m))

    def move_once(self):
        """One move that changes the board (some direction does at the start)."""
        for d in ('left', 'right', 'up', 'down'):
            self.send({'type': 'move', 'dir': d})
            if self.expect('state')['moved']:
                return
        raise SystemExit('no move changed the board')

    def close(self):
        self.file.close()  # the socket stays open while its file is
        self.sock.close()


def labels_fit(driver, size):
    """Every label over a board keeps its name and its numbers on one line each, and
    the numbers are never cut short."""
    bad = driver.execute_script("""
        const bad = [];
        for (const label of document.querySelectorAll('.view:not([hidden]) .player .label')) {
            for (const el of label.children) {
                const line = parseFloat(getComputedStyle(el).fontSize) * 1.7;
                if (el.offsetHeight > line || (el.tagName === 'B' && el.scrollWidth > el.clientWidth + 1))
                    bad.push(el.textContent + ' (' + el.offsetWidth + 'x' + el.offsetHeight + ')');
            }
        }
        return bad;""")
    if bad:
        raise SystemExit('labels wrap or are cut at %dx%d: %r' % (size + (bad,)))


def visible(driver, view):
    return not driver.find_element(By.ID, 'v-' + view).get_attribute('hidden') is not None


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
    return int(re.search(r'(\d+) moves?', text).group(1))


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


def first_screen(d, port, url):
    """The first screen says what race2048 is, lists the open rooms and races at once."""
    host = JsonClient(port, 'host')
    host.send({'type': 'create'})
    code = host.expect('room')['room']
    # From --http-port, which never greets a socket the browser opened early:
    # one load, no retry (test_browser_loads makes many).
    d.get(url)
    wait(d, 'the first screen', shown('name'))
    intro = d.find_element(By.CSS_SELECTOR, '#v-name .intro').text
    if 'same tiles' not in intro or 'race' not in intro:
        raise SystemExit('the first screen does not say what race2048 is: %r' % intro)
    wait(d, 'the open room on the first screen', lambda d: code in text_of(d, 'first-rooms'))
    shoot(d, 'first', fits_width)
    d.find_element(By.ID, 'name').send_keys('browser')
    click(d, '#b-race-now')
    wait(d, 'the quick race queue', lambda d: shown('wait')(d) and
         'Looking for 1 opponent' in text_of(d, 'wait-text'))
    click(d, '#b-wait-leave')
    wait(d, 'the lobby', shown('lobby'))
    host.close()


def bot_marks(driver, css):
    """The texts (names, and status where it is there) beside each bot marker under css."""
    return driver.execute_script("""
        return Array.from(document.querySelectorAll(arguments[0] + ' .botmark'), (m) => {
            const named = m.parentElement.cloneNode(true);
            named.querySelector('.botmark').remove();
            return named.textContent.trim();});""", css)


def race_a_bot(d, port):
    """Races against the server's bots. A room of four with a bot, joined by code: the
    waiting room marks the bot. From the first screen, Race a bot at level 1 to 64: the
    bot's moves arrive, the page wins, the end screen marks the bot and verifies. The bot
    agrees to a rematch at once; leaving it forfeits, and the end screen names the bot the
    winner. The lobby has the same card, at the level chosen last."""
    host = JsonClient(port, 'bothost')
    host.send({'type': 'create', 'players': 4, 'bots': 1})
    code = host.expect('room')['room']
    d.find_element(By.ID, 'code').send_keys(code)
    click(d, '#f-join button[type=submit]')
    wait(d, 'the room with a bot', lambda d: shown('wait')(d) and
         '3 of 4' in text_of(d, 'wait-text'))
    marked = bot_marks(d, '#wait-players')
    if len(marked) != 1 or not marked[0].startswith('bot-') or 'bothost' in marked[0]:
        raise SystemExit('the waiting room marks %r as bots: %s' % (marked, text_of(d, 'wait-players')))
    shoot(d, 'wait-bot', fits_width)
    click(d, '#b-wait-leave')
    wait(d, 'the lobby after the room with a bot', shown('lobby'))
    d.find_element(By.ID, 'code').clear()
    host.close()

    # The first screen again, its name kept: Race a bot, level 1, to 64.
    click(d, '#b-rename')
    wait(d, 'the first screen again', shown('name'))
    form = '#f-bot '
    note = text_of(d, 'f-bot')
    if 'Level 3, club' not in note or '3 · club' not in Select(d.find_element(
            By.CSS_SELECTOR, form + 'select[name=level]')).first_selected_option.text:
        raise SystemExit('Race a bot does not default to level 3: %r' % note)
    Select(d.find_element(By.CSS_SELECTOR, form + 'select[name=level]')).select_by_value('1')
    Select(d.find_element(By.CSS_SELECTOR, form + 'select[name=target]')).select_by_visible_text('64')
    wait(d, "level 1's line", lambda d: 'Level 1, beginner' in text_of(d, 'f-bot'))
    shoot(d, 'first-bot', fits_width, scroll_to='#f-bot')
    click(d, '#b-race-bot')
    wait(d, 'the race against the bot', shown('game'))
    if 'first to 64' not in text_of(d, 'game-info'):
        raise SystemExit('the bot race is not to 64: ' + text_of(d, 'game-info'))
    marked = bot_marks(d, '#others')
    if len(marked) != 1 or bot_marks(d, '#me'):
        raise SystemExit('the race marks %r as bots (and %r of ours)' % (marked, bot_marks(d, '#me')))
    bot_name = marked[0].split(' · ')[0]
    before = tiles(d, '#others')
    wait(d, "the bot's board to change", lambda d: tiles(d, '#others') != before)
    wait(d, "the bot's move count", lambda d: re.search(r'\b[1-9]\d* moves?',
                                                        d.find_element(By.CSS_SELECTOR, '#others .label b').text))
    shoot(d, 'race-bot', lambda d, size: (labels_fit(d, size), fits_width(d, size)))
    if not press_until_end(d, 60):
        raise SystemExit('the race against the bot did not end')
    reason = text_of(d, 'end-reason')
    verdict = wait(d, 'the bot race verification', lambda d: d.find_element(By.ID, 'verify').text)
    print('bot race:', bot_name, '|', reason, '|', verdict)
    if reason != 'You won: reached the target.' or 'verified: this game was fair' not in verdict:
        raise SystemExit('the race against the bot ended: %r, %r' % (reason, verdict))
    marked = bot_marks(d, '#ranking')
    if marked != [bot_name] or len(bot_marks(d, '#end-boards')) != 1:
        raise SystemExit('the end screen marks %r as bots, not %r' % (marked, bot_name))
    shoot(d, 'end-bot', lambda d, size: (labels_fit(d, size), fits_width(d, size)))
    check_console(d)

    # The bot agrees to a rematch at once; leaving it is a forfeit, the bot wins.
    click(d, '#b-rematch')
    wait(d, 'the rematch against the bot', shown('game'))
    click(d, '#b-leave')
    wait(d, 'the end of the rematch left', shown('end'))
    reason = text_of(d, 'end-reason')
    print('bot rematch:', reason)
    if reason != 'You left the race: %s won.' % bot_name:
        raise SystemExit('the rematch left ends with: %r' % reason)
    ranking = d.execute_script("""
        return Array.from(document.querySelectorAll('#ranking tr'), (tr) =>
            [tr.children[1].lastChild.textContent, tr.children[5].textContent]);""")
    if len(ranking) != 2 or ranking[0][0] != bot_name or ranking[1][1] != 'left':
        raise SystemExit('the ranking after the forfeit: %r' % ranking)
    check_console(d)
    click(d, '#b-lobby')
    wait(d, 'the lobby after the rematch left', shown('lobby'))
    # The lobby offers the same, at the level chosen last.
    level = Select(d.find_element(By.CSS_SELECTOR, '#f-lobby-bot select[name=level]'))
    if level.first_selected_option.get_attribute('value') != '1' or \
            'Level 1, beginner' not in text_of(d, 'f-lobby-bot'):
        raise SystemExit('the lobby forgot the level: %r' % text_of(d, 'f-lobby-bot'))
    level.select_by_value('2')
    click(d, '#f-lobby-bot button[type=submit]')
    wait(d, 'the race against a bot from the lobby', shown('game'))
    marked = bot_marks(d, '#others')
    if len(marked) != 1 or not marked[0].startswith('bot-L2-'):
        raise SystemExit('the lobby\'s bot race marks %r as bots' % marked)
    click(d, '#b-leave')
    wait(d, 'the end of the lobby\'s bot race', lambda d: shown('end')(d) and
         'You left the race' in text_of(d, 'end-reason'))
    click(d, '#b-lobby')
    wait(d, 'the lobby after the bot races', shown('lobby'))


def error_where_it_happens(d):
    """A join with an unknown code says so inside the join form, plainly."""
    d.find_element(By.ID, 'code').send_keys('ZZZZ9')
    click(d, '#f-join button[type=submit]')
    wait(d, 'the error', lambda d: d.find_element(By.ID, 'error').is_displayed())
    where = d.execute_script("""
        const e = document.getElementById('error');
        return [e.textContent, !!e.closest('#f-join'), parseFloat(getComputedStyle(e).fontSize),
                getComputedStyle(e).fontWeight];""")
    if 'no room has that code' not in where[0].lower() or not where[1] or where[2] < 14:
        raise SystemExit('the error is not shown in the join form, plainly: %r' % where)
    if 'no room' in text_of(d, 'conn').lower():
        raise SystemExit('the error is still in the header')
    shoot(d, 'error', fits_width, scroll_to='#error')
    d.find_element(By.ID, 'code').clear()


def replay_checks(d, size):
    labels_fit(d, size)
    fits_width(d, size)
    shapes = d.execute_script("""
        return ['r-first', 'r-prev', 'r-next', 'r-last'].map((id) => {
            const b = document.getElementById(id);
            return [id, b.textContent.trim(), !!b.querySelector('svg path')];});""")
    for bid, text, svg in shapes:
        if text or not svg:
            raise SystemExit('%s draws with a glyph %r, not a shape' % (bid, text))
    look = d.execute_script("return getComputedStyle(document.getElementById('r-step')).appearance")
    if look != 'none':
        raise SystemExit('the replay slider is the browser default (appearance %r)' % look)
    gap = d.execute_script("""
        return document.getElementById('b-replay-back').getBoundingClientRect().top -
               document.getElementById('replay-boards').getBoundingClientRect().bottom;""")
    if gap < 12:
        raise SystemExit('"Back to the lobby" is %.0f px from the boards' % gap)


def watch_a_race(d, port):
    """A spectator is not told to use the arrow keys; one move is "1 move"."""
    a, b = JsonClient(port, 'ann'), JsonClient(port, 'bob-the-builder')
    a.send({'type': 'create'})
    code = a.expect('room')['room']
    b.send({'type': 'join', 'room': code})
    a.expect('start')
    b.expect('start')
    a.move_once()
    click(d, '#b-rooms')
    wait(d, 'the running room in the list',
         lambda d: code in text_of(d, 'rooms') and 'racing' in text_of(d, 'rooms'))
    row = [li for li in d.find_elements(By.CSS_SELECTOR, '#rooms li') if code in li.text][0]
    row.find_element(By.XPATH, './/button[text()="Watch"]').click()
    wait(d, 'the race watched', lambda d: shown('game')(d) and
         'Watching' in text_of(d, 'h-game'))
    hint = text_of(d, 'hint')
    if 'Arrow' in hint or 'WASD' in hint:
        raise SystemExit('a spectator is told: ' + hint)
    wait(d, "ann's one move", lambda d: '1 move' in text_of(d, 'others'))
    if re.search(r'\b1 moves\b', text_of(d, 'others')):
        raise SystemExit('"1 moves" on: ' + text_of(d, 'others'))
    shoot(d, 'watch', lambda d, size: (labels_fit(d, size), fits_width(d, size)))
    click(d, '#b-leave')
    wait(d, 'the lobby after watching', shown('lobby'))
    a.close()
    b.close()


def rematch(d, port):
    """After a race, the end screen says who asked for a rematch and whom it waits for,
    never the old room's code to give away."""
    r = JsonClient(port, 'rmbob')
    r.send({'type': 'create', 'time_limit': 1})
    code = r.expect('room')['room']
    d.find_element(By.ID, 'code').send_keys(code)
    click(d, '#f-join button[type=submit]')
    wait(d, 'the timed race', shown('game'))
    r.expect('start')
    wait(d, 'the end of the timed race', shown('end'), 15)
    r.expect('end')
    r.send({'type': 'rematch'})
    wait(d, 'the rematch asked by rmbob',
         lambda d: 'rmbob wants a rematch' in text_of(d, 'rematch-status'))
    if not shown('end')(d):
        raise SystemExit('the page left the end screen when rmbob asked for a rematch')
    shoot(d, 'rematch-asked', fits_width)
    click(d, '#b-rematch')
    wait(d, 'the rematch race', shown('game'))
    r.expect('start')
    wait(d, 'the end of the rematch', shown('end'), 15)
    r.expect('end')
    click(d, '#b-rematch')
    wait(d, 'the rematch wait',
         lambda d: 'waiting for rmbob' in text_of(d, 'rematch-status'))
    body = d.find_element(By.TAG_NAME, 'body').text
    if not shown('end')(d) or 'Give the code' in body or ('Room ' + code) in body:
        raise SystemExit('the rematch wait shows the old room: ' + body[:300])
    shoot(d, 'rematch', fits_width)
    # rmbob goes: the rematch waits in a new room, whose code is the one to give.
    r.close()
    wait(d, 'the rematch room of one', lambda d: shown('wait')(d) and
         'others have gone' in text_of(d, 'wait-text'))
    new_code = re.search(r'Room ([A-Z0-9]+)', text_of(d, 'wait-text')).group(1)
    if new_code == code:
        raise SystemExit('the rematch room has the old code ' + code)
    shoot(d, 'rematch-alone', fits_width)
    click(d, '#b-wait-leave')
    wait(d, 'the lobby after the rematch', shown('lobby'))


def analysis(d, what):
    """The replay view's analysis runs to its end (a progress line meanwhile), shows the
    three biggest mistakes (or none), and going to mistake 1 moves the replay to the
    position before that move. Prints the time it took."""
    wait(d, 'the analysis of the ' + what, lambda d: 'analysed in' in text_of(d, 'a-status'), 120)
    status = text_of(d, 'a-status')
    moves = int(re.search(r'(\d+) moves? analysed in', status).group(1))
    ms = d.execute_script('return app.replay.analysis.ms')
    print('analysis (%s): %d moves in %.2f s in the browser, %.0f moves/s | %s' %
          (what, moves, ms / 1000, moves / max(ms / 1000, 1e-3), status))
    expected = d.execute_script('return app.replay.tracks[app.replay.viewed].used.length - 1')
    if moves != expected:
        raise SystemExit('the analysis judged %d of %d moves' % (moves, expected))
    items = d.find_elements(By.CSS_SELECTOR, '#a-mistakes li')
    texts = [li.text for li in items]
    print('analysis (%s) mistakes: %r' % (what, texts))
    if len(items) == 1 and 'No mistakes' in texts[0]:
        return
    if not 1 <= len(items) <= 3 or any(not t.startswith('Mistake %d: move' % (i + 1))
                                       for i, t in enumerate(texts)):
        raise SystemExit('the mistakes are not shown: %r' % texts)
    # Each as given up as the next or more, as race2048-replay --analyse orders them
    # (points of the chance of reaching the target before percent of the value).
    given = [(m.group(2) == 'pts', float(m.group(1)))
             for m in (re.search(r'\(([\d.]+)\s(%|pts)', t) for t in texts)]
    if given != sorted(given, reverse=True) or given[-1][1] <= 0:
        raise SystemExit('the mistakes are not the biggest first: %r' % texts)
    marks = d.find_elements(By.CSS_SELECTOR, '#a-strip .mark.worst')
    if len(marks) != len(items):
        raise SystemExit('%d numbered marks for %d mistakes' % (len(marks), len(items)))
    first = int(items[0].get_attribute('data-move'))
    d.find_element(By.ID, 'r-last').click()
    items[0].find_element(By.TAG_NAME, 'button').click()
    wait(d, 'the replay at mistake 1', lambda d: d.find_element(By.ID, 'r-step')
         .get_attribute('value') == str(first - 1))
    note = text_of(d, 'a-note')
    if ('move %d:' % first) not in note or 'mistake 1' not in note:
        raise SystemExit('the note at mistake 1 says: %r' % note)
    if text_of(d, 'r-pos') != 'move %d of %s' % (first - 1, d.find_element(By.ID, 'r-step')
                                                 .get_attribute('max')):
        raise SystemExit('the replay is not before move %d: %r' % (first, text_of(d, 'r-pos')))
    exact = d.execute_script('const an = app.replay.analysis;'
                             'return an.worst.map((k) => [k + 1, an.verdicts[k].givenUp]);')
    return [tuple(x) for x in exact]


def same_as_cli(d, found, journal=None):
    """The page's three mistakes are race2048-replay --analyse's, for the game the
    replay shows (from the journal) and the player analysed."""
    game, player = d.execute_script(
        'const rp = app.replay; return [rp.rec.game, rp.tracks[rp.viewed].p.id];')
    out = subprocess.run([REPLAY, journal or journals[-1], '--analyse', str(game)], capture_output=True,
                         text=True, timeout=120 * SLOWDOWN).stdout
    line = [ln for ln in out.splitlines()
            if ln.startswith('player %d (' % player) and 'biggest mistakes:' in ln]
    if not line:
        raise SystemExit('race2048-replay --analyse %s says: %r' % (game, out[-400:]))
    cli = [(int(n), float(g)) for n, g in re.findall(
        r'move (\d+) \([a-z]+, not [a-z]+: ([\d.]+) (?:%|pts)', line[0])]
    page = found or []
    print('analysis: race2048-replay --analyse %s: %s' % (game, line[0]))
    if [n for n, _ in cli] != [n for n, _ in page] or any(
            abs(a - b) > 0.051 for (_, a), (_, b) in zip(cli, page)):
        raise SystemExit('the page found %r, race2048-replay %r' % (page, cli))


# Issue 29: a race to 64 that ann loses by passing up the 64 on her last move, bob (on
# the same tiles) making it; made in the page with its engine and AI: the AI plays a
# game until a move makes 64 that the AI, not knowing the target, does not play.
CRAFT_RACE = """
const e = app.engine, has64 = () => [...Array(16).keys()].some((i) => e.w_cell(i) >= 6);
e.w_ai_init();
for (let seed = 1; seed < 500; seed++) {
  const moves = [];
  const at = (extra) => { engineNew(4, seed); for (const m of moves) e.w_move(m);
                          return extra < 0 || e.w_move(extra) === 1; };
  for (let n = 0; n < 400; n++) {
    at(-1);
    if (has64()) break;
    e.w_ai_goal(0, 0);
    if (e.w_ai_judge(0) < 0) break;
    let ai = -1;  // the AI's move: the first of the best value, as its search picks
    for (let d = 0; d < 4; d++) if (e.w_ai_value(d) >= 0 && (ai < 0 || e.w_ai_value(d) > e.w_ai_value(ai))) ai = d;
    const makes = [0, 1, 2, 3].filter((d) => at(d) && has64());
    if (makes.length && !makes.includes(ai)) {
      const L = 'lrud', past = moves.map((m) => L[m]).join('');
      const ann = past + L[ai], bob = past + L[makes[0]];
      return { j: 'game', game: 900001, room: 'CRAFT', size: 4, target: 64, seed,
               salt: '0'.repeat(32), reason: 'target', winner: 2,
               results: [{ id: 2, name: 'bob', score: 0, moves: bob.length, status: 'won' },
                         { id: 1, name: 'ann', score: 0, moves: ann.length, status: 'playing' }],
               moves: { 1: ann, 2: bob } };
    }
    moves.push(ai);
  }
}
return null;
"""


def race_lost_by_passing_up(d):
    """The page and race2048-replay --analyse agree on CRAFT_RACE: ann's last move,
    which handed the race to bob, is her mistake 1, all her chance given up."""
    rec = d.execute_script(CRAFT_RACE)
    if not rec:
        raise SystemExit('no game where the AI passes up a 64')
    d.execute_script('startReplay(arguments[0], {analyse: true, player: 1});', rec)
    found = analysis(d, 'race lost by passing up the 64')
    last = len(rec['moves']['1'])
    if not found or found[0] != (last, 100.0):
        raise SystemExit('mistake 1 of the race lost on move %d: %r' % (last, found))
    text = d.find_elements(By.CSS_SELECTOR, '#a-mistakes li')[0].text
    if 'pts of the chance of reaching 64 given up' not in text:
        raise SystemExit('mistake 1 says: %r' % text)
    journal = os.path.join(temp_dirs[-1], 'crafted.journal')
    with open(journal, 'w') as f:
        f.write(json.dumps(rec) + '\n')
    same_as_cli(d, found, journal)


def main():
    port, http_port = start_server()
    url = 'http://127.0.0.1:%d/' % http_port
    d = browser()
    try:
        started = time.time()
        viewport(d, DESKTOP)
        first_screen(d, port, url)
        shoot(d, 'lobby', fits_width)
        race_a_bot(d, port)
        error_where_it_happens(d)

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
        shoot(d, 'replay', replay_checks)
        # Where did I lose? The analysis of the replayed game, from its button.
        d.find_element(By.ID, 'b-analyse').click()
        found = analysis(d, 'solo 3x3 game')
        if replays:
            same_as_cli(d, found)
        shoot(d, 'analysis-solo', replay_checks)
        d.find_element(By.ID, 'r-first').click()
        d.find_element(By.ID, 'r-play').click()
        wait(d, 'the replay to play to its end', lambda d: tiles(d, '#replay-boards') == solo_end)
        d.find_element(By.ID, 'b-replay-back').click()
        wait(d, 'the lobby after the replay', shown('lobby'))
        watch_a_race(d, port)

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
        shoot(d, 'wait', fits_width)
        # The longest name there is (16), to show that labels over small boards fit it.
        bot = subprocess.Popen([BOT, '--port', str(port), '--name', 'tcpbot-player-31',
                                '--join', code, '--games', '1', '--delay-ms', '100',
                                '--strategy', 'greedy'],
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
        # The bot waits while the screenshots are taken, so that no tile is caught
        # mid-slide (docs/ shows them).
        bot.send_signal(signal.SIGSTOP)
        shoot(d, 'race', lambda d, size: (labels_fit(d, size), fits_width(d, size)))
        bot.send_signal(signal.SIGCONT)
        # On the phone, swipes move: some direction changes the board.
        viewport(d, PHONE)
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
        viewport(d, DESKTOP)
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
        shoot(d, 'end', lambda d, size: (labels_fit(d, size), fits_width(d, size)))
        check_console(d)
        nc.close()
        # The end screen analyses our own moves at once, in the replay viewer.
        d.find_element(By.ID, 'b-end-analyse').click()
        wait(d, 'the replay of our race', shown('replay'))
        wait(d, 'the progress of the analysis', lambda d: 'nalys' in text_of(d, 'a-status'))
        analysis(d, '4x4 race')
        shoot(d, 'analysis', replay_checks)
        check_console(d)
        d.find_element(By.ID, 'b-replay-back').click()
        wait(d, 'the results again', shown('end'))
        # The race from the recent games: the same mistakes as the text version.
        d.find_element(By.ID, 'b-lobby').click()
        wait(d, 'the lobby after the race', shown('lobby'))
        wait(d, 'the race in the recent games',
             lambda d: d.find_elements(By.CSS_SELECTOR, '#history button') and
             'Race ' in text_of(d, 'history'))
        row = [li for li in d.find_elements(By.CSS_SELECTOR, '#history li')
               if li.text.startswith('Race ')][0]
        row.find_element(By.TAG_NAME, 'button').click()
        wait(d, 'the replay of the race', shown('replay'))
        d.execute_script("""const rp = app.replay;
            document.getElementById('a-player').value = rp.tracks.findIndex((t) => t.p.name === 'browser');
            document.getElementById('a-player').dispatchEvent(new Event('change'));""")
        d.find_element(By.ID, 'b-analyse').click()
        same_as_cli(d, analysis(d, '4x4 race from the history'))
        # The bot's longer game, for the figure (and the same check).
        d.execute_script("""const rp = app.replay;
            document.getElementById('a-player').value = rp.tracks.findIndex((t) => t.p.name.startsWith('tcpbot'));
            document.getElementById('a-player').dispatchEvent(new Event('change'));""")
        d.find_element(By.ID, 'b-analyse').click()
        same_as_cli(d, analysis(d, "race2048-bot's 4x4 race"))
        race_lost_by_passing_up(d)
        # Without the AI in the module (an older server), or without WebAssembly, the
        # button says analysis is unavailable.
        for engine, why in (("Object.fromEntries(Object.entries(real).filter(([k]) => !k.startsWith('w_ai')))",
                             'no AI'), ('null', 'unavailable')):
            state = d.execute_script("""const real = app.engine;
                app.engine = %s;
                startReplay(app.replay.rec);
                const b = document.getElementById('b-analyse');
                const out = [b.disabled, b.textContent, document.getElementById('a-status').textContent,
                             b.title];
                app.engine = real;
                return out;""" % engine)
            if not state[0] or state[1] != 'Analysis unavailable' or why not in state[2] + state[3]:
                raise SystemExit('without %s the Analyse button says %r' % (why, state))
        d.find_element(By.ID, 'b-replay-back').click()
        wait(d, 'the lobby after the race replay', shown('lobby'))
        rematch(d, port)
        check_console(d)
        print('browser test passed in %.1f s; screenshots in %s' % (time.time() - started, OUT))
    finally:
        clean_up()


if __name__ == '__main__':
    main()
