#!/usr/bin/env python3
"""test_browser_links.py - issue 29 in a real headless Chromium against the real race2048d:
games anyone can link to, and the screens that said something untrue.

One browser enters the lobby without a name (as "Race now" does), waits in the quick queue
(which says what it knows of bots), makes a room (the waiting room shows the code large and
the line a telnet friend types), a person on netcat joins with that very line, the race
runs, the browser leaves it, and "Rematch" then shows the server's error beside it. The end
screen's "Copy link" gives http://host/game/ID; a second browser with a fresh profile opens
it: every board, the names, the fairness check, the scrubber, play and pause, the analysis
and its "Go to move N", which pauses a replay that is playing. An unknown game's link is the
page saying so. Screenshots of the game page at 1280x800 and 390x844 go to OUTDIR
(game-page-desktop.png, game-page-phone.png: docs/web-game*.png are copies).

usage: test_browser_links.py RACE2048D OUTDIR
"""
import re
import socket
import threading
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from browser_harness import *  # noqa: F401,F403 (the shared set-up)


def drop_all(sock):
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def the_lobby_without_a_name(d, url):
    """"Enter the lobby" takes an empty name as "Race now" does: the server's."""
    d.get(url)
    wait(d, 'the first screen', shown('name'))
    click(d, '#b-enter')
    wait(d, 'the lobby entered without a name', shown('lobby'))
    wait(d, 'the name the server gave', lambda d: re.search(r'\(player-\d+\)', text_of(d, 'who')))


def the_queue(d):
    """The quick queue says how long it has waited and what it knows of bots."""
    click(d, '#f-quick button[type=submit]')
    wait(d, 'the queue', lambda d: shown('wait')(d) and
         'Looking for 1 opponent' in text_of(d, 'wait-text'))
    note = wait(d, "the queue's line on bots", lambda d: text_of(d, 'wait-bot'))
    if 'bot' not in note or '15 s' not in note or not note.startswith('Waiting'):
        raise SystemExit('the queue says of bots: %r' % note)
    if d.find_element(By.ID, 'wait-room').is_displayed():
        raise SystemExit('the queue shows a room code')
    click(d, '#b-wait-leave')
    wait(d, 'the lobby after the queue', shown('lobby'))


def the_waiting_room(d, port):
    """A room to 64: the code large with a copy button, the settings, and the line a
    telnet friend types, which a person on netcat then types. Returns the netcat socket."""
    form = '#f-create '
    Select(d.find_element(By.CSS_SELECTOR, form + 'select[name=target]')).select_by_visible_text('64')
    Select(d.find_element(By.CSS_SELECTOR, form + 'select[name=time_limit]')).select_by_value('180')
    click(d, form + 'button[type=submit]')
    wait(d, 'the waiting room', lambda d: shown('wait')(d) and
         d.find_element(By.ID, 'wait-code').text)
    code = text_of(d, 'wait-code')
    size = d.execute_script(
        "return parseFloat(getComputedStyle(document.getElementById('wait-code')).fontSize)")
    line = text_of(d, 'wait-join')
    settings = text_of(d, 'wait-settings')
    print('waiting room: %s (%.0f px) | %s | %s | %s' % (code, size, text_of(d, 'wait-telnet'),
                                                        settings, text_of(d, 'wait-bot')))
    if not re.fullmatch(r'[A-Z0-9]{4,8}', code) or size < 28 or line != 'join ' + code:
        raise SystemExit('the waiting room shows %r at %.0f px, the telnet line %r' % (code, size, line))
    if ('Room ' + code) not in text_of(d, 'wait-text'):
        raise SystemExit('the room code is not in %r' % text_of(d, 'wait-text'))
    for want in ('4×4', 'first to 64', '2 players', 'time limit 3 min'):
        if want not in settings:
            raise SystemExit('the settings %r lack %r' % (settings, want))
    if 'No bot' not in text_of(d, 'wait-bot'):
        raise SystemExit('the waiting room does not say whether a bot comes')
    click(d, '#b-copy-code')
    wait(d, 'the copy note', lambda d: text_of(d, 'copy-code-note'))
    shoot(d, 'links-wait')
    # A friend on netcat types exactly the line shown.
    nc = socket.create_connection(('127.0.0.1', port))
    nc.sendall(('name friend\r\n%s\r\n' % line).encode())
    threading.Thread(target=drop_all, args=(nc,), daemon=True).start()
    wait(d, 'the race with the netcat friend', shown('game'))
    nc.sendall(b'asdwasdw\r\n')  # a line of moves, as a netcat user types them
    wait(d, "the friend's moves", lambda d: d.execute_script(
        "return [...app.game.views.values()].some((v) => v.p.name === 'friend' && v.p.moves >= 2)"))
    return nc


def leave_and_rematch(d):
    """A few moves, then Leave: the end says so; Rematch shows the server's error
    beside it. The end screen's link, once the game is listed: returns it."""
    body = d.find_element(By.TAG_NAME, 'body')
    deadline = time.time() + 20 * SLOWDOWN
    keys = [Keys.ARROW_DOWN, Keys.ARROW_RIGHT, Keys.ARROW_DOWN, Keys.ARROW_LEFT, Keys.ARROW_UP]
    i = 0
    while time.time() < deadline:
        if d.execute_script('return app.game ? app.game.moves.length : 0') >= 12:
            break
        body.send_keys(keys[i % len(keys)])
        i += 1
    else:
        raise SystemExit('the browser could not make 12 moves')
    click(d, '#b-leave')
    wait(d, 'the end after leaving', lambda d: shown('end')(d) and
         'You left the race' in text_of(d, 'end-reason'))
    click(d, '#b-rematch')
    err = wait(d, "the rematch's error", lambda d: d.find_element(By.ID, 'error').is_displayed()
               and d.find_element(By.ID, 'error'))
    where = d.execute_script("""
        const e = document.getElementById('error'), row = document.getElementById('b-rematch').closest('.row');
        return [e.textContent, row.nextElementSibling === e,
                e.getBoundingClientRect().top - row.getBoundingClientRect().bottom];""")
    print('rematch after leaving:', where)
    if 'rematch' not in where[0].lower() or not where[1] or where[2] > 40:
        raise SystemExit('the rematch error is not beside the control: %r' % where)
    del err
    wait(d, "the end screen's Copy link", lambda d: d.find_element(By.ID, 'b-end-link').is_displayed())
    click(d, '#b-end-link')
    href = wait(d, 'the link shown', lambda d: d.execute_script(
        "const a = document.querySelector('#v-end a.game-link'); return a && a.href;"))
    if not re.fullmatch(r'http://127\.0\.0\.1:\d+/game/\d+', href):
        raise SystemExit('the end screen links to %r' % href)
    check_console(d)
    return href


def step(d):
    return int(d.find_element(By.ID, 'r-step').get_attribute('value'))


def playing(d):
    return d.execute_script('return !!(app.replay && app.replay.timer)')


def the_game_page(d, href):
    """The link in a fresh browser: the game, every board and name, the fairness check;
    scrub, play, pause; the analysis's Go to move N pauses the replay."""
    d.get(href)
    game = href.rsplit('/', 1)[1]
    wait(d, 'the linked game', lambda d: shown('replay')(d) and
         d.find_elements(By.CSS_SELECTOR, '#replay-boards .player'))
    if text_of(d, 'h-replay') != 'Game ' + game:
        raise SystemExit('the game page is titled %r' % text_of(d, 'h-replay'))
    boards = d.find_elements(By.CSS_SELECTOR, '#replay-boards .player')
    info = text_of(d, 'replay-info')
    if len(boards) != 2 or 'friend' not in info or not re.search(r'player-\d+', info):
        raise SystemExit('the game page shows %d boards, %r' % (len(boards), info))
    # Why it ended, as the end screen says it (a race won with no tile near the
    # target is not a mystery: the other racer left).
    if not re.search(r' won: (reached the target|no moves left|the time ran out|'
                     r'everyone else left)', info):
        raise SystemExit('the game page does not say why the game ended: %r' % info)
    verdict = wait(d, 'the fairness check', lambda d: text_of(d, 'r-verify'))
    print('game page:', info, '|', verdict)
    if 'verified: this game was fair' not in verdict:
        raise SystemExit('the game page says: ' + verdict)
    longest = int(d.find_element(By.ID, 'r-step').get_attribute('max'))
    if longest < 12:
        raise SystemExit('the game page has %d moves' % longest)
    # The scrubber, as a user drags it.
    d.execute_script("""const s = document.getElementById('r-step');
        s.value = 5; s.dispatchEvent(new Event('input'));""")
    if text_of(d, 'r-pos') != 'move 5 of %d' % longest or step(d) != 5:
        raise SystemExit('scrubbed to %r' % text_of(d, 'r-pos'))
    # Play, then pause: the step stays where the pause left it.
    Select(d.find_element(By.ID, 'r-speed')).select_by_value('2')
    click(d, '#r-play')
    wait(d, 'the replay to play', lambda d: step(d) > 5)
    click(d, '#r-play')
    paused_at = step(d)
    if playing(d) or text_of(d, 'r-play') != 'Play':
        raise SystemExit('the pause did not pause')
    # The analysis of the browser's moves; its marks are in the move list too.
    Select(d.find_element(By.ID, 'a-player')).select_by_visible_text(
        [o.text for o in Select(d.find_element(By.ID, 'a-player')).options if o.text != 'friend'][0])
    click(d, '#b-analyse')
    wait(d, 'the analysis', lambda d: 'analysed in' in text_of(d, 'a-status'), 120)
    mistakes = d.find_elements(By.CSS_SELECTOR, '#a-mistakes li button')
    marked = d.find_elements(By.CSS_SELECTOR, '#r-moves button.worst')
    print('analysis:', text_of(d, 'a-status'), '| mistakes:', len(mistakes), '| marked moves:', len(marked))
    if len(marked) != len(mistakes):
        raise SystemExit('%d mistakes, %d marked in the move list' % (len(mistakes), len(marked)))
    if step(d) != paused_at:
        raise SystemExit('the paused replay moved from %d to %d' % (paused_at, step(d)))
    # Go to move N while the replay plays: it stops there (issue 29, defect 5).
    click(d, '#r-first')
    click(d, '#r-play')
    wait(d, 'the replay to play again', lambda d: step(d) >= 1)
    if mistakes:
        target = int(mistakes[0].find_element(By.XPATH, './..').get_attribute('data-move')) - 1
        mistakes[0].click()
    else:  # every move as good as the AI's: a move of the list goes there the same way
        target = 2
        d.find_elements(By.CSS_SELECTOR, '#r-moves button')[target].click()
    if playing(d) or step(d) != target or text_of(d, 'r-play') != 'Play':
        raise SystemExit('"Go to move %d" left the replay playing=%s at %d' %
                         (target + 1, playing(d), step(d)))
    if 'next' not in d.find_elements(By.CSS_SELECTOR, '#r-moves button')[target].get_attribute('class'):
        raise SystemExit('the move list does not mark move %d as next' % (target + 1))
    click(d, '#b-replay-link')
    link = wait(d, "the replay's link", lambda d: d.execute_script(
        "const a = document.querySelector('#v-replay a.game-link'); return a && a.href;"))
    if link != href:
        raise SystemExit("the replay's link %r is not %r" % (link, href))
    d.execute_script("document.querySelector('#v-replay a.game-link').remove();"
                     "document.getElementById('b-replay-link').textContent = 'Copy link';")
    shoot(d, 'game-page')
    check_console(d)
    # Back: the first screen (this profile never chose a name), at /.
    click(d, '#b-replay-back')
    wait(d, 'the first screen after the game page', shown('name'))
    if d.execute_script('return location.pathname') != '/':
        raise SystemExit('the address stays %r' % d.execute_script('return location.href'))
    # A game that is not there: the page says so, with no script.
    d.get(href.rsplit('/', 1)[0] + '/987654')
    if 'No such game' not in d.find_element(By.TAG_NAME, 'body').text:
        raise SystemExit('an unknown game page says: ' + d.find_element(By.TAG_NAME, 'body').text)


def main():
    port, http_port = start_server()
    url = 'http://127.0.0.1:%d/' % http_port
    started = time.time()
    try:
        d = browser()
        the_lobby_without_a_name(d, url)
        the_queue(d)
        nc = the_waiting_room(d, port)
        href = leave_and_rematch(d)
        nc.close()
        # The link from the history list is the same.
        click(d, '#b-lobby')
        wait(d, 'the lobby with the game', lambda d: shown('lobby')(d) and
             d.find_elements(By.XPATH, '//ul[@id="history"]//button[text()="Copy link"]'))
        d.find_element(By.XPATH, '//ul[@id="history"]//button[text()="Copy link"]').click()
        listed = wait(d, 'the history link', lambda d: d.execute_script(
            "const a = document.querySelector('#history a.game-link'); return a && a.href;"))
        if listed != href:
            raise SystemExit('the history links to %r, the end screen to %r' % (listed, href))
        check_console(d)
        the_game_page(browser(), href)
        print('browser links test passed in %.1f s; screenshots in %s' % (time.time() - started, OUT))
    finally:
        clean_up()


if __name__ == '__main__':
    main()
