// app.js - the race2048 web client: JSON mode over a WebSocket, boards with animations,
// reconnection with the resume token, verification of every game through the project's
// own engine compiled to WebAssembly (the rules are not written here), and the analysis of
// a replayed game by the project's AI, compiled in with it.
'use strict';

const $ = (id) => document.getElementById(id);
const DIRS = { ArrowLeft: 'left', ArrowRight: 'right', ArrowUp: 'up', ArrowDown: 'down',
               a: 'left', d: 'right', w: 'up', s: 'down' };
const WASM_DIR = { left: 0, right: 1, up: 2, down: 3 };

// ------------------------------------------------------------------ state ---

const app = {
  ws: null,
  name: localStorage.getItem('race2048.name') || '',
  // The account this browser keeps ("Keep my name"): { name, key }, or null.
  kept: readKept(),
  account: null,  // logged in: { name, rating }, from welcome
  me: 0,          // our player id
  token: '',      // resume secret, from welcome
  view: 'name',
  game: null,     // the game on screen: see startGame()
  wantResume: false,
  retries: 0,
  retryTimer: 0,
  lostAt: 0,
  lastSolo: { size: 4 },
  engine: null,   // the wasm exports, or null if unavailable
  engineNote: 'loading the verifier…',
  replay: null,
  named: false,   // the player chose to enter (a name, or a race at once)
  pending: false, // a request sent with the hello: its answer, not the lobby, comes next
  actionAt: null, // where the last request was made: its error is shown there
  actionType: '', // the type of that request (a rematch's not_playing is shown)
  serverName: '', // the name the server gave before the player chose one
  endGameId: null, // the id of the game on the end screen, once history lists it
  findEnd: null,  // { commit, tries } while looking for that id
  // The game of a link /game/ID this page was opened on (until the player leaves it).
  link: (/^\/game\/([^/]+)\/?$/.exec(location.pathname) || [])[1] || null,
  // TV mode (see tvStart), or null.
  tv: null,
  // The arena page's arena: { code, a (its last `arena` object) }, or null. The
  // page's own link is #arena=CODE (the server serves no /arena/CODE page).
  arena: null,
  arenaFromLink: (/^#arena=([A-Za-z0-9]{1,16})$/.exec(location.hash) || [])[1] || null,
};
const GRACE_MS = 30000; // the server's default grace period

function readKept() {
  try {
    const k = JSON.parse(localStorage.getItem('race2048.account') || 'null');
    return k && typeof k.name === 'string' && typeof k.key === 'string' ? k : null;
  } catch (e) { return null; }
}

// The hello for a name: with the kept key when it is the kept account's name
// (in any case), so that the page logs in by itself.
function helloMsg(name) {
  const k = app.kept;
  return k && name.toLowerCase() === k.name.toLowerCase()
    ? { type: 'hello', name, key: k.key } : { type: 'hello', name };
}

// The name in the lobby's heading, with the rating when logged in; the
// account card's buttons.
function drawAccount(name) {
  const who = $('who');
  who.textContent = '(' + name;
  if (app.account) {
    const r = document.createElement('span');
    r.className = 'who-rating';
    r.id = 'who-rating';
    r.textContent = ', rating ' + app.account.rating;
    who.appendChild(r);
  }
  who.append(')');
  $('b-keep').hidden = !!app.account;
  $('b-forget').hidden = !app.kept;
  $('acct-note').textContent = app.account
    ? 'This browser keeps the name ' + app.account.name + ' and logs in by itself; your rating is ' +
      app.account.rating + '. Quick races of 4×4 are rated.'
    : 'Keep this name: the server gives this browser a key, and your races count for a rating.';
  // Today's challenge is for accounts only (account_needed): a guest is told how.
  $('b-daily').disabled = !app.account;
  $('daily-note').textContent = app.account
    ? 'Everyone meets the same tiles today: one 4×4 game per kept name.'
    : 'Everyone meets the same tiles today. It needs a kept name: press "Keep my name" first.';
}

function show(view) {
  if (view !== app.view) hideError();
  app.view = view;
  for (const v of ['name', 'lobby', 'wait', 'game', 'end', 'replay', 'board', 'arena'])
    $('v-' + v).hidden = v !== view;
}

// "1 move", "2 moves".
const plural = (n, word) => n + ' ' + word + (n === 1 ? '' : 's');

// The server's bot levels (ai/level.c: a pace, a share of random moves, a
// search), as the "Race a bot" forms offer them.
const BOT_LEVELS = [
  { level: 1, name: 'beginner', note: 'about a move a second, often at random' },
  { level: 2, name: 'casual', note: '1.5 moves a second, now and then careless' },
  { level: 3, name: 'club', note: '2.5 moves a second, thinks one move ahead' },
  { level: 4, name: 'strong', note: '4 moves a second, thinks two moves ahead' },
  { level: 5, name: 'expert', note: '6 moves a second, the strongest search' },
];
const BOT_LEVEL_DEFAULT = 3;

// The small "bot" marker beside a server-run bot's name.
function botMark() {
  const b = document.createElement('span');
  b.className = 'botmark';
  b.textContent = 'bot';
  b.title = 'a bot run by the server';
  return b;
}

function hideError() {
  $('error').hidden = true;
}

// Shows an error next to where the request was made (its form, card or list
// row), or at the top of the screen when that is no longer on it.
function showError(text) {
  const el = $('error');
  const at = app.actionAt;
  const view = $('v-' + app.view);
  if (at && view.contains(at)) {
    if (at.matches('form, .card')) at.appendChild(el); // inside its card, under the buttons
    else if (at.matches('li')) at.parentElement.insertAdjacentElement('afterend', el);
    else at.insertAdjacentElement('afterend', el);
  } else {
    view.insertAdjacentElement('afterbegin', el);
  }
  el.textContent = text;
  el.hidden = false;
  el.scrollIntoView({ block: 'nearest' });
}

// Sends a request made by the control el (whose error, if any, shows there).
function act(el, msg) {
  hideError();
  app.actionAt = el ? (el.closest('form, .card, li, .row') || el) : null;
  app.actionType = msg.type;
  send(msg);
}

function setConn(text, bad) {
  $('conn').textContent = text;
  $('conn').classList.toggle('bad', !!bad);
}

// -------------------------------------------------------------- the engine ---

async function loadEngine() {
  try {
    const res = await fetch('/static/engine.wasm');
    const bytes = res.ok ? await res.arrayBuffer() : new ArrayBuffer(0);
    // A server built without a wasm toolchain serves an empty module.
    if (!bytes.byteLength) throw new Error('not built into this server');
    const { instance } = await WebAssembly.instantiate(bytes, {});
    app.engine = instance.exports;
    app.engineNote = '';
  } catch (e) {
    app.engine = null;
    app.engineNote = 'verification unavailable: the WebAssembly engine is ' +
      (e && e.message === 'not built into this server' ? 'not built into this server'
                                                        : 'not loadable here');
  }
}

// Starts the engine on the seed text as `end` reveals it; false if it refuses.
function engineNew(size, seed) {
  const e = app.engine;
  const text = new TextEncoder().encode(String(seed));
  if (text.length > e.w_seed_cap()) return false;
  new Uint8Array(e.memory.buffer, e.w_seed_buf(), text.length).set(text);
  return e.w_new(size, text.length) === 0;
}

function engineBoard(size) {
  const rows = [];
  for (let r = 0; r < size; r++) {
    const row = [];
    for (let c = 0; c < size; c++) {
      const x = app.engine.w_cell(r * size + c);
      row.push(x ? 2 ** x : 0);
    }
    rows.push(row);
  }
  return rows;
}

const sameBoard = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// SHA-256 hex of a string: crypto.subtle where the browser offers it (https
// or localhost), else a small implementation of FIPS 180-4 (plain http on a LAN).
async function sha256hex(text) {
  const bytes = new TextEncoder().encode(text);
  if (window.crypto && crypto.subtle) {
    const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
  }
  return sha256fallback(bytes);
}

function sha256fallback(msg) {
  const K = [];
  const H = [];
  const frac = (x) => ((x - Math.floor(x)) * 2 ** 32) >>> 0;
  for (let n = 2, found = 0; found < 64; n++) {
    let prime = true;
    for (let d = 2; d * d <= n; d++) if (n % d === 0) { prime = false; break; }
    if (!prime) continue;
    if (found < 8) H.push(frac(Math.sqrt(n)));
    K.push(frac(Math.cbrt(n)));
    found++;
  }
  const len = msg.length;
  const total = ((len + 9 + 63) >> 6) << 6;
  const m = new Uint8Array(total);
  m.set(msg);
  m[len] = 0x80;
  const view = new DataView(m.buffer);
  view.setUint32(total - 4, (len * 8) >>> 0);
  view.setUint32(total - 8, Math.floor(len / 2 ** 29));
  const w = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < total; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(off + i * 4);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, h] = H;
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      h = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
    }
    [a, b, c, d, e, f, g, h].forEach((x, i) => { H[i] = (H[i] + x) >>> 0; });
  }
  return H.map((x) => x.toString(16).padStart(8, '0')).join('');
}

// ----------------------------------------------------------------- boards ---

// A board on screen. Tiles are elements that move, so a slide animates; what
// moved where is read off the before and after boards the server sent (one
// old tile, or two equal ones merged, per new tile along the line), which
// needs no knowledge of the rules beyond that a move compacts each line.
class Board {
  constructor(parent, size) {
    this.size = size;
    this.el = document.createElement('div');
    this.el.className = 'board';
    this.el.setAttribute('role', 'img'); // read out as its label: the values, row by row
    this.el.style.setProperty('--n', size);
    for (let r = 0; r < size; r++)
      for (let c = 0; c < size; c++) {
        const cell = document.createElement('div');
        cell.className = 'cell';
        cell.style.setProperty('--r', r);
        cell.style.setProperty('--c', c);
        this.el.appendChild(cell);
      }
    this.tiles = []; // [r][c] -> element
    for (let r = 0; r < size; r++) this.tiles.push(new Array(size).fill(null));
    this.values = null;
    parent.appendChild(this.el);
  }

  tile(v, r, c, cls) {
    const t = document.createElement('div');
    t.className = 'tile' + (cls ? ' ' + cls : '');
    const digits = String(v).length;
    if (digits >= 3) t.classList.add('d' + Math.min(digits, 5));
    if (v > 2048) t.classList.add('big');
    t.dataset.v = v;
    t.textContent = v;
    this.place(t, r, c);
    this.el.appendChild(t);
    return t;
  }

  place(t, r, c) {
    t.style.setProperty('--r', r);
    t.style.setProperty('--c', c);
  }

  // Draws board (rows of values) at once, without animation.
  set(board) {
    for (const row of this.tiles) for (const t of row) if (t) t.remove();
    this.el.querySelectorAll('.tile').forEach((t) => t.remove());
    for (let r = 0; r < this.size; r++)
      for (let c = 0; c < this.size; c++) {
        const v = board[r][c];
        this.tiles[r][c] = v ? this.tile(v, r, c) : null;
      }
    this.values = board.map((row) => row.slice());
    this.el.setAttribute('aria-label', boardLabel(board));
  }

  // Animates the move dir from the current board to board, spawn placed last.
  update(board, dir, spawn) {
    if (!this.values || !dir || !this.animate(board, dir, spawn)) this.set(board);
    this.values = board.map((row) => row.slice());
    this.el.setAttribute('aria-label', boardLabel(board));
  }

  animate(board, dir, spawn) {
    const n = this.size;
    // Line i, position k from the edge the tiles move towards -> [r, c].
    const at = (i, k) => dir === 'left' ? [i, k] : dir === 'right' ? [i, n - 1 - k]
                        : dir === 'up' ? [k, i] : [n - 1 - k, i];
    const after = board.map((row) => row.slice());
    if (spawn && spawn.value) after[spawn.row][spawn.col] = 0;
    const plan = []; // [tile element, r, c, dies]
    const made = []; // [value, r, c] for merged tiles
    for (let i = 0; i < n; i++) {
      const old = [];
      for (let k = 0; k < n; k++) {
        const [r, c] = at(i, k);
        if (this.values[r][c]) old.push([this.values[r][c], this.tiles[r][c]]);
      }
      let j = 0;
      for (let k = 0; k < n; k++) {
        const [r, c] = at(i, k);
        const v = after[r][c];
        if (!v) continue;
        if (j < old.length && old[j][0] === v) {
          plan.push([old[j][1], r, c, false]);
          j += 1;
        } else if (j + 1 < old.length && old[j][0] * 2 === v && old[j + 1][0] * 2 === v) {
          plan.push([old[j][1], r, c, true], [old[j + 1][1], r, c, true]);
          made.push([v, r, c]);
          j += 2;
        } else {
          return false; // not a move of this board (e.g. a missed message)
        }
      }
      if (j !== old.length) return false;
    }
    const tiles = [];
    for (let r = 0; r < n; r++) tiles.push(new Array(n).fill(null));
    for (const [t, r, c, dies] of plan) {
      t.classList.remove('new', 'merged');
      this.place(t, r, c);
      if (dies) {
        t.classList.add('dying');
        setTimeout(() => t.remove(), 110);
      } else {
        tiles[r][c] = t;
      }
    }
    for (const [v, r, c] of made) tiles[r][c] = this.tile(v, r, c, 'merged');
    if (spawn && spawn.value) tiles[spawn.row][spawn.col] = this.tile(spawn.value, spawn.row, spawn.col, 'new');
    this.tiles = tiles;
    return true;
  }
}

// What a screen reader says for a board: the tiles row by row.
function boardLabel(board) {
  return 'board, row by row: ' + board.map((row) => row.map((v) => v || 'empty').join(', ')).join('; ');
}

// A player's panel: name, score, moves, status, and a board.
class PlayerView {
  constructor(parent, p, size, isMe) {
    this.el = document.createElement('div');
    this.el.className = 'player' + (isMe ? ' me-board' : '');
    this.label = document.createElement('div');
    this.label.className = 'label';
    this.el.appendChild(this.label);
    parent.appendChild(this.el);
    this.board = new Board(this.el, size);
    this.p = p;
    this.connected = true;
    this.isMe = isMe;
    this.board.set(p.board);
    this.draw();
  }

  draw() {
    const p = this.p;
    const who = this.isMe ? 'You' : p.name;
    const status = p.status === 'playing' ? '' : ' · ' + p.status;
    const away = this.connected ? '' : ' · reconnecting';
    this.label.innerHTML = '';
    const name = document.createElement('span');
    // The marker first: a long name is cut short at its end, never the marker.
    if (p.bot) name.appendChild(botMark());
    name.append(who + status + away);
    name.title = (p.bot ? 'bot ' : '') + who + status + away; // cut short with an ellipsis over a small board
    const nums = document.createElement('b');
    nums.textContent = p.score + ' pts · ' + plural(p.moves, 'move');
    this.label.append(name, nums);
    this.el.classList.toggle('gone', p.status === 'left' || !this.connected);
  }

  state(p, dir, spawn, moved) {
    this.p = p;
    if (moved) this.board.update(p.board, dir, spawn);
    this.draw();
  }
}

// ------------------------------------------------------------- connection ---

function send(obj) {
  if (app.ws && app.ws.readyState === WebSocket.OPEN) app.ws.send(JSON.stringify(obj));
}

function connect() {
  clearTimeout(app.retryTimer);
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(proto + '//' + location.host + '/ws');
  app.ws = ws;
  ws.onopen = () => {
    if (app.wantResume && app.token) {
      setConn('Reconnected; resuming your game…');
      send({ type: 'resume', token: app.token });
    } else {
      setConn('Connected');
      if (app.tv) {
        tvAgain();
      } else if (app.name) {
        app.named = true;
        send(helloMsg(app.name));
      } else if (app.named) {
        enterLobby(); // entered with the name the server gives
      } else {
        if (!app.link && !app.arena) show('name'); // a game link stays on its game
        send({ type: 'rooms' }); // for the first screen (the server names us meanwhile)
        send({ type: 'arenas' });
        if (app.arena) send({ type: 'arena_results', arena: app.arena.code });
      }
    }
  };
  ws.onmessage = (ev) => {
    let m;
    try { m = JSON.parse(ev.data); } catch (e) { return; }
    handle(m);
  };
  ws.onclose = () => {
    if (app.ws !== ws) return;
    app.ws = null;
    const inGame = app.game && !app.game.ended && app.game.you;
    if (inGame && !app.wantResume) {
      app.wantResume = true;
      app.lostAt = Date.now();
      app.retries = 0;
    }
    if (app.wantResume && Date.now() - app.lostAt > GRACE_MS) {
      app.wantResume = false;
      app.game = null;
      setConn('Connection lost for too long; your seat is gone. Reconnecting to the lobby…', true);
    }
    const delay = Math.min(8000, 250 * 2 ** app.retries);
    app.retries += 1;
    setConn((app.wantResume ? 'Connection lost; resuming your game in ' : 'Disconnected; retrying in ') +
            Math.ceil(delay / 1000) + ' s (attempt ' + app.retries + ')…', true);
    app.retryTimer = setTimeout(connect, delay);
  };
}

// --------------------------------------------------------------- messages ---

function handle(m) {
  switch (m.type) {
  case 'welcome':
    app.me = m.id;
    app.token = m.token;
    app.retries = 0;
    app.serverName = m.name;
    // welcome's rating is the rating object; its integer is shown.
    app.account = m.account ? { name: m.name, rating: (m.rating && m.rating.rating) || 1500 } : null;
    drawAccount(m.name);
    if (app.wantResume) {
      setConn('Reconnected: your game goes on');
      app.wantResume = false;
    } else if (!app.named || app.tv) {
      // The name the server gave while the first screen asked for the rooms
      // (the player has not chosen yet), or to a TV (which goes on).
    } else if (app.pending) {
      app.name = m.name; // a race asked for with the hello: its answer comes next
    } else if (app.view === 'name' || app.view === 'wait' || !app.game || app.game.ended) {
      app.name = m.name;
      if (app.view !== 'end' && app.view !== 'replay' && app.view !== 'arena') enterLobby();
    }
    break;
  case 'queued':
    app.pending = false;
    if (app.view !== 'wait' || !app.queuedAt) app.queuedAt = Date.now();
    showWait('Looking for ' + (m.players - 1) + ' opponent' + (m.players > 2 ? 's' : '') +
             ' (' + m.waiting + ' of ' + m.players + ' here)…', [], null);
    tickQueue();
    break;
  case 'room':
    app.pending = false;
    if (m.arena) break; // an arena race: its `start` follows at once
    if (app.view === 'end' && app.lastEnd && m.room === app.lastEnd.room) {
      showRematch(m); // about the race that ended: who asked for a rematch
      break;
    }
    {
      // A rematch asked for alone (everyone else had gone) waits in a new room.
      const alone = app.view === 'end' && app.lastEnd && app.lastEnd.room && m.players.length < m.need;
      showWait((alone ? 'The others have gone; your rematch waits in a new room. ' : '') +
               'Room ' + m.room + ': ' + m.players.length + ' of ' + m.need + ' players. ' +
               (m.players.length < m.need ? 'Give the code to your friends.' : 'Starting…'),
               m.players, m);
    }
    break;
  case 'start': app.pending = false; startGame(m); if (app.tv) tvShowing(m); break;
  case 'state': onState(m); break;
  case 'player': onPlayer(m); break;
  case 'end':
    if (app.tv) tvEnded(m);
    else if (app.game && app.game.arena && app.game.you) arenaRaceEnded(m);
    else onEnd(m);
    break;
  case 'arena': app.pending = false; onArena(m); break;
  case 'arenas': drawArenas(m.arenas || []); break;
  case 'left':
    if (app.arena && app.game && app.game.arena) { app.game = null; showArena(); break; }
    if (!app.tv && (app.view === 'game' || app.view === 'wait')) enterLobby();
    break;
  case 'rooms': drawRooms(m.rooms); drawFirstRooms(m.rooms); if (app.tv) tvRooms(m.rooms); break;
  case 'history':
    if (app.findEnd) findEndGame(m.games);
    drawHistory(m.games);
    break;
  case 'replay': startReplay(m); break;
  case 'registered': onRegistered(m); break;
  case 'leaderboard': if (m.board === 'daily') drawDaily(m.rows || []); else drawTop(m.rows || []); break;
  case 'profile': drawProfile(m); break;
  case 'bye': setConn('The server is stopping.', true); break;
  case 'error': onError(m); break;
  default: break;
  }
}

function onError(m) {
  if (m.code === 'bad_token') {
    app.wantResume = false;
    app.game = null;
    setConn('Your game ended while you were away.', true);
    if (app.name) send(helloMsg(app.name));
    return;
  }
  if (m.code === 'bad_key' && app.kept) { // the kept key is no longer good here
    forget();
    showError('This browser\'s key for ' + app.name + ' was refused: it is forgotten. ' +
              'Pick a name to play as a guest.');
    show('name');
    return;
  }
  if (app.tv && app.tv.asked) { // that race ended or is full: another one
    app.tv.skip.add(app.tv.asked);
    app.tv.asked = null;
    tvLater(1000);
    return;
  }
  // A key after the end; but a rematch refused (we left that race) is said.
  if (m.code === 'not_playing' && app.game && app.actionType !== 'rematch') return;
  if (m.code === 'unknown_type') { // an older server without history or replay
    $('history').textContent = 'Recent games are not available on this server.';
    return;
  }
  app.pending = false;
  const text = m.message || m.code;
  showError(text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? '' : '.'));
}

// --------------------------------------------------------------- accounts ---

// `registered`: the name is ours; the key is kept in this browser (and sent
// nowhere else) so that the next visit logs in by itself.
function onRegistered(m) {
  app.kept = { name: m.name, key: m.key };
  localStorage.setItem('race2048.account', JSON.stringify(app.kept));
  app.name = m.name;
  localStorage.setItem('race2048.name', m.name);
  app.account = { name: m.name, rating: 1500 }; // every account starts at 1500
  drawAccount(m.name);
}

function forget() {
  app.kept = null;
  app.account = null;
  localStorage.removeItem('race2048.account');
  localStorage.removeItem('race2048.name');
}

// The leaderboard view: the top 20, and the profile of a player.
function openBoard(name) {
  show('board');
  send({ type: 'leaderboard', board: 'rating', limit: 20 });
  $('profile').hidden = true;
  if (name) send({ type: 'profile', name });
}

// Today's 4×4 daily board in the lobby: the top 10 (rank, name, score, max tile, moves).
function drawDaily(rows) {
  const tb = $('daily-rows');
  tb.innerHTML = '';
  if (!rows.length) {
    const tr = document.createElement('tr');
    const td = document.createElement('td');
    td.colSpan = 5;
    td.textContent = 'Nobody has played today yet.';
    tr.appendChild(td);
    tb.appendChild(tr);
  }
  for (const r of rows.slice(0, 10)) {
    const tr = document.createElement('tr');
    if (app.account && r.name === app.account.name) tr.className = 'you';
    for (const v of [r.rank, r.name, r.score, r.max_tile, r.moves]) {
      const td = document.createElement('td');
      td.textContent = String(v);
      tr.appendChild(td);
    }
    tb.appendChild(tr);
  }
}

function drawTop(rows) {
  const tb = $('top-rows');
  tb.innerHTML = '';
  if (!rows.length) {
    const tr = document.createElement('tr');
    const td = document.createElement('td');
    td.colSpan = 4;
    td.textContent = 'Nobody has 10 rated races yet.';
    tr.appendChild(td);
    tb.appendChild(tr);
  }
  for (const r of rows) {
    const tr = document.createElement('tr');
    for (const v of [r.rank, '', r.rating, r.games]) {
      const td = document.createElement('td');
      td.textContent = v;
      tr.appendChild(td);
    }
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'link';
    b.textContent = r.name;
    b.onclick = () => send({ type: 'profile', name: r.name });
    tr.children[1].appendChild(b);
    tb.appendChild(tr);
  }
}

// The rating after each of the last races as a line in a 300x80 box.
function drawChart(svg, values) {
  svg.innerHTML = '';
  if (!values.length) return;
  if (values.length === 1) values = [values[0], values[0]]; // one race: a level line
  const lo = Math.min(...values) - 10, hi = Math.max(...values) + 10;
  const pts = values.map((v, i) => (i * 300 / (values.length - 1)).toFixed(1) + ',' +
                                   (76 - (v - lo) * 72 / (hi - lo)).toFixed(1));
  const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
  line.setAttribute('points', pts.join(' '));
  svg.appendChild(line);
}

function drawProfile(m) {
  $('profile').hidden = false;
  $('h-profile').textContent = m.name;
  const r = m.rating || {};
  $('p-rating').textContent = 'Rating ' + r.rating + (r.provisional ? ' (provisional)' : '');
  $('p-counts').textContent = plural(m.races || 0, 'rated race') + ', ' + plural(m.wins || 0, 'win');
  drawChart($('p-chart'), m.chart || []);
  const ul = $('p-recent');
  ul.innerHTML = '';
  for (const id of m.recent || []) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = '/game/' + id;
    a.textContent = 'Game ' + id;
    li.appendChild(a);
    ul.appendChild(li);
  }
  if (!(m.recent || []).length) ul.innerHTML = '<li class="empty"><span>No games yet.</span></li>';
}

// A rated race's `end`: every account's rating before and after.
function drawRatings(ratings) {
  const p = $('end-ratings');
  p.innerHTML = '';
  p.hidden = !ratings || !ratings.length;
  for (const r of ratings || []) {
    const d = r.after - r.before;
    const span = document.createElement('span');
    span.className = d > 0 ? 'up' : d < 0 ? 'down' : '';
    span.textContent = (r.id === app.me ? 'Your rating' : r.name) + ': ' + r.before + ' → ' +
      r.after + ' (' + (d > 0 ? '+' : '') + d + ')';
    if (p.childNodes.length) p.append(' · ');
    p.appendChild(span);
    if (r.id === app.me && app.account) app.account.rating = r.after;
  }
  if (app.account) drawAccount(app.account.name);
}

// ------------------------------------------------------------------ lobby ---

function enterLobby() {
  app.game = null;
  show('lobby');
  send({ type: 'rooms' });
  send({ type: 'history', limit: 10 });
  send({ type: 'leaderboard', board: 'daily', size: 4, limit: 10 });
}

// The end screen of a race after someone asked for a rematch: who asked, and
// whom we wait for (the players of the race still here who have not asked).
function showRematch(m) {
  const asked = m.players || [];
  const askedIds = new Set(asked.map((p) => p.id));
  const names = (list, last) => list.length < 2 ? list.join('')
    : list.slice(0, -1).join(', ') + ' ' + last + ' ' + list[list.length - 1];
  const others = (app.lastEnd.results || [])
    .filter((p) => p.status !== 'left' && p.id !== app.me && !askedIds.has(p.id))
    .map((p) => p.name);
  const missing = Math.max(0, m.need - asked.length);
  let text;
  if (askedIds.has(app.me)) {
    const who = others.length === missing ? names(others, 'and')
      : plural(missing, 'more player') + (others.length ? ' (of ' + names(others, 'and') + ')' : '');
    text = 'Rematch asked: waiting for ' + (who || 'the others') + ' to ask too. ' +
           'It starts when everyone still here has.';
    $('b-rematch').disabled = true;
  } else {
    const who = asked.filter((p) => p.id !== app.me).map((p) => p.name);
    text = names(who, 'and') + (who.length === 1 ? ' wants' : ' want') +
           ' a rematch: press Rematch to race again, or go back to the lobby.';
  }
  $('rematch-status').textContent = text;
  $('rematch-status').hidden = false;
}

// The waiting screen: in a room (room: its `room` message), its code large with
// a copy button, the line telnet friends type, its settings; in the queue of
// `quick` (room null), how long it has been and what the server may do.
function showWait(text, players, room) {
  show('wait');
  if (room) app.queuedAt = 0;
  $('h-wait').textContent = room ? 'Waiting room' : 'Finding a race';
  $('wait-room').hidden = !room;
  if (room) {
    if ($('wait-code').textContent !== room.room) $('copy-code-note').textContent = '';
    $('wait-code').textContent = room.room;
    $('wait-join').textContent = 'join ' + room.room;
    const limit = room.time_limit ? (room.time_limit % 60 ? room.time_limit + ' s' : room.time_limit / 60 + ' min') : '';
    $('wait-settings').textContent = 'Settings: ' + room.size + '×' + room.size + ' · first to ' + room.target +
      ' · ' + room.need + ' players · ' + (limit ? 'time limit ' + limit : 'no time limit') +
      (room.rated ? ' · rated' : '');
    // The server seats its bots in a room only when the room is made with them.
    $('wait-bot').textContent = room.players.length < room.need
      ? 'No bot takes a free seat here: the race starts when ' + room.need + ' players are in.' : '';
  }
  $('wait-text').textContent = text;
  const ul = $('wait-players');
  ul.innerHTML = '';
  for (const p of players) {
    const li = document.createElement('li');
    const name = document.createElement('span');
    if (p.bot) name.appendChild(botMark());
    name.append(p.name + (p.id === app.me ? ' (you)' : ''));
    li.appendChild(name);
    ul.appendChild(li);
  }
}

// The queue of `quick`: how long we have waited, and what the protocol lets the
// page know of bots (`queued` does not say whether or when one comes).
function tickQueue() {
  if (app.view !== 'wait' || !app.queuedAt) return;
  const secs = Math.floor((Date.now() - app.queuedAt) / 1000);
  $('wait-bot').textContent = 'Waiting ' + secs + ' s. If nobody else asks for this race, the server ' +
    'may seat one of its bots instead: after 15 s by default (its host can change that or turn it off).';
  clearTimeout(app.queueTimer);
  app.queueTimer = setTimeout(tickQueue, 1000);
}

// ----------------------------------------------------------- game links ---

// Why a game ended, as the end screen and a game's page say it.
const END_REASONS = { target: 'reached the target', all_over: 'no moves left',
                      time: 'the time ran out', forfeit: 'everyone else left' };
const gameUrl = (id) => location.origin + '/game/' + encodeURIComponent(id);

// Puts text on the clipboard: the Clipboard API where the page may (https,
// localhost), else a selected textarea; false if neither worked.
async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await Promise.race([navigator.clipboard.writeText(text),
                          new Promise((_, no) => setTimeout(() => no(new Error('timeout')), 1000))]);
      return true;
    }
  } catch (e) { /* not focused, or not allowed: the textarea below */ }
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.setAttribute('readonly', '');
  ta.style.position = 'fixed';
  ta.style.opacity = '0';
  document.body.appendChild(ta);
  ta.select();
  let ok = false;
  try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
  ta.remove();
  return ok;
}

// "Copy link" of the game id: copies http(s)://host/game/ID and shows the link
// beside the button, to open or to copy by hand if the clipboard refused.
async function copyLink(btn, id) {
  const url = gameUrl(id);
  let a = btn.parentElement.querySelector('a.game-link');
  if (!a) {
    a = document.createElement('a');
    a.className = 'game-link';
    btn.insertAdjacentElement('afterend', a);
  }
  a.href = url;
  a.textContent = url;
  const ok = await copyText(url);
  btn.textContent = ok ? 'Link copied' : 'Copy link';
  a.title = ok ? 'copied to the clipboard' : 'the clipboard refused: copy this link';
}

function dropLinks(box) {
  box.querySelectorAll('a.game-link').forEach((a) => a.remove());
}

// The end screen's game in `history` (found by its commitment, unique to it):
// its id makes the end screen's link. A game no board moved in is never listed.
function findEndGame(games) {
  const f = app.findEnd;
  const g = (games || []).find((x) => x.commit === f.commit);
  if (g) {
    app.findEnd = null;
    app.endGameId = g.game;
    $('b-end-link').hidden = false;
  } else if (++f.tries < 3) {
    setTimeout(() => { if (app.findEnd === f) send({ type: 'history', limit: 20 }); }, 500 * f.tries);
  } else {
    app.findEnd = null;
  }
}

function item(text, buttons) {
  const li = document.createElement('li');
  const span = document.createElement('span');
  span.textContent = text;
  li.appendChild(span);
  for (const [label, fn] of buttons) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'secondary small';
    b.textContent = label;
    b.onclick = fn;
    li.appendChild(b);
  }
  return li;
}

function drawRooms(rooms) {
  const ul = $('rooms');
  ul.innerHTML = '';
  if (!rooms.length) {
    const li = item('No open rooms right now.', []);
    li.className = 'empty';
    ul.appendChild(li);
  }
  for (const r of rooms) ul.appendChild(roomItem(r, (el, msg) => act(el, msg)));
}

function roomItem(r, go) {
  const buttons = [['Watch', (e) => go(e.target, { type: 'watch', room: r.room })]];
  if (!r.started) buttons.unshift(['Join', (e) => go(e.target, { type: 'join', room: r.room })]);
  const what = r.room + ' · ' + r.players + '/' + r.need + ' · ' + r.size + '×' + r.size +
               ' to ' + r.target + (r.started ? ' · racing' : '');
  if (!r.names) return item(what, buttons); // a server that does not say who
  const li = item('', buttons);
  li.classList.add('race');
  li.dataset.room = r.room;
  const span = li.firstChild;
  const who = document.createElement('span');
  who.className = 'race-who';
  who.textContent = r.names.map((n, i) => n + (r.scores ? ' ' + r.scores[i] : '')).join(' vs ') ||
    'nobody yet';
  const more = document.createElement('span');
  more.className = 'race-what';
  more.textContent = what + (r.spectators ? ' · ' + r.spectators + ' watching' : '');
  span.append(who, more);
  return li;
}

// The first screen's list: the races being played (the most watched first),
// then rooms to join. Joining or watching from it enters with the name typed.
function drawFirstRooms(rooms) {
  const ul = $('first-rooms');
  ul.innerHTML = '';
  if (!rooms.length) {
    const li = item('No race on right now: race now, or make one in the lobby.', []);
    li.className = 'empty';
    ul.appendChild(li);
  }
  const racing = tvOrder(rooms);
  const open = rooms.filter((r) => !r.started);
  for (const r of racing.concat(open).slice(0, 8))
    ul.appendChild(roomItem(r, (el, msg) => enterWith(el, msg)));
}

// ---------------------------------------------------------------------- TV ---

// TV mode watches the running race with the most spectators (ties: the one
// that started last; the server lists running races in the order they
// started) and, when it ends or goes away, the next one after a pause.
const TV_NEXT_MS = 5000;   // the finished race stays on screen this long
const TV_LOOK_MS = 5000;   // how often TV looks again while no race is on
const ROOMS_LISTED_MAX = 100; // the most rows a `rooms` reply has

// The running races, the one TV shows first first.
function tvOrder(rooms) {
  return rooms.map((r, i) => ({ r, i })).filter((x) => x.r.started)
    .sort((a, b) => (b.r.spectators || 0) - (a.r.spectators || 0) || b.i - a.i)
    .map((x) => x.r);
}

function tvStart() {
  hideError();
  app.tv = { room: null, asked: null, ended: false, timer: 0, skip: new Set() };
  app.game = null;
  $('me').innerHTML = '';
  $('others').innerHTML = '';
  $('v-game').classList.add('tv');
  $('b-leave').textContent = 'Leave TV';
  $('h-game').textContent = 'TV';
  $('game-info').textContent = '';
  $('hint').textContent = 'Esc or Leave TV goes back.';
  show('game');
  tvBar('Looking for a race…');
  send({ type: 'rooms' });
}

function tvStop() {
  if (!app.tv) return;
  clearTimeout(app.tv.timer);
  app.tv = null;
  $('v-game').classList.remove('tv');
  $('tv-bar').hidden = true;
  $('b-leave').textContent = 'Leave';
  send({ type: 'leave' });
  app.game = null;
  show('name');
  send({ type: 'rooms' });
}

// A new connection: TV looks for a race again.
function tvAgain() {
  Object.assign(app.tv, { room: null, asked: null, ended: false });
  clearTimeout(app.tv.timer);
  tvBar('Looking for a race…');
  send({ type: 'rooms' });
}

function tvBar(text) {
  $('tv-bar').textContent = text;
  $('tv-bar').hidden = false;
}

// Asks for the rooms again in ms (then tvRooms picks a race).
function tvLater(ms) {
  clearTimeout(app.tv.timer);
  app.tv.timer = setTimeout(() => { if (app.tv) send({ type: 'rooms' }); }, ms);
}

// A `rooms` reply in TV mode: between races, the next race; during one, a
// check that it is still on (a race whose node went away sends no `end`).
function tvRooms(rooms) {
  const tv = app.tv;
  if (tv.asked) return; // a watch on its way
  if (tv.room && !tv.ended) {
    // (A full list may have left it out: only a shorter one says it is gone.)
    if (rooms.length < ROOMS_LISTED_MAX && !rooms.some((r) => r.room === tv.room))
      tvGone('The race is no longer on.');
    return;
  }
  if (tv.ended) return; // its pause is not over: tvLater asks again
  const next = tvOrder(rooms).find((r) => !tv.skip.has(r.room));
  if (!next) {
    $('me').innerHTML = '';
    $('others').innerHTML = '';
    $('h-game').textContent = 'TV';
    $('game-info').textContent = '';
    tvBar('No race is on right now: the next one to start comes on here.');
    tv.skip.clear(); // a race skipped for an error may be watchable later
    tvLater(TV_LOOK_MS);
    return;
  }
  tv.asked = next.room;
  send({ type: 'watch', room: next.room });
}

// The race TV asked for is on screen (its `start`).
function tvShowing(m) {
  const tv = app.tv;
  tv.room = m.room;
  tv.asked = null;
  tv.ended = false;
  $('h-game').textContent = 'TV · race ' + m.room;
  $('hint').textContent = 'Esc or Leave TV goes back.';
  tvBar('Watching ' + m.players.map((p) => p.name).join(' vs ') + '.');
  clearTimeout(tv.timer);
}

// The race on TV ended: its result for a few seconds, then the next race.
function tvEnded(m) {
  const tv = app.tv;
  if (m.room !== tv.room) return;
  if (app.game) app.game.ended = true;
  for (const p of m.results || []) {
    const view = app.game && app.game.views.get(p.id);
    if (view) view.state(p, null, null, false);
  }
  const winner = (m.results || []).find((p) => p.id === m.winner);
  tvGone((winner ? winner.name + ' won' : 'A draw') + '.');
}

function tvGone(text) {
  const tv = app.tv;
  tv.ended = true;
  tv.skip = new Set([tv.room]);
  tvBar(text + ' The next race comes on in ' + Math.round(TV_NEXT_MS / 1000) + ' s…');
  clearTimeout(tv.timer);
  tv.timer = setTimeout(() => {
    if (!app.tv) return;
    app.tv.ended = false;
    app.tv.room = null;
    send({ type: 'rooms' });
  }, TV_NEXT_MS);
}

// Enters from the first screen with the name typed (or the one the server gave
// when the box is empty) and sends msg at once.
function enterWith(el, msg) {
  const box = $('name');
  const name = box.value.trim();
  if (name && !box.checkValidity()) {
    box.reportValidity();
    return;
  }
  app.named = true;
  app.pending = true;
  if (name) {
    app.name = name;
    localStorage.setItem('race2048.name', name);
    send(helloMsg(name));
  }
  act(el, msg);
}

function drawHistory(games) {
  const ul = $('history');
  ul.innerHTML = '';
  if (!games || !games.length) {
    const li = item('No finished games yet.', []);
    li.className = 'empty';
    ul.appendChild(li);
    return;
  }
  for (const g of games) {
    const names = (g.results || []).map((p) => p.name + ' ' + p.score).join(', ');
    const when = g.ended ? new Date(g.ended).toLocaleTimeString() : '';
    ul.appendChild(item((g.room ? 'Race ' + g.room : 'Solo') + ' · ' + names + ' · ' + when,
                        [['Replay', () => send({ type: 'replay', game: g.game })],
                         ['Copy link', (e) => copyLink(e.target, g.game)]]));
  }
}

// ------------------------------------------------------------------- game ---

function startGame(m) {
  const g = app.game;
  // A snapshot after resume (or rematch-less restart) of the same game keeps
  // what was recorded for verification.
  const same = g && !g.ended && g.commit === m.commit;
  app.game = {
    room: m.room || null, you: m.you || 0, size: m.size, target: m.target, arena: m.arena || null,
    timeLimit: m.time_limit, commit: m.commit, ended: false,
    startedAt: same ? g.startedAt : Date.now(),
    startBoard: same ? g.startBoard : null,
    moves: same ? g.moves : [], // our moves that changed the board: {dir, board, score}
    views: new Map(),
  };
  const game = app.game;
  const meBox = $('me');
  const others = $('others');
  meBox.innerHTML = '';
  others.innerHTML = '';
  for (const p of m.players) {
    const isMe = p.id === game.you;
    const view = new PlayerView(isMe ? meBox : others, p, m.size, isMe);
    game.views.set(p.id, view);
    if (isMe && !game.startBoard) game.startBoard = p.board;
  }
  meBox.hidden = !game.you;
  $('b-game-arena').hidden = !game.arena;
  if (game.arena && game.you && (!app.arena || app.arena.code !== game.arena))
    app.arena = { code: game.arena, a: null };
  const what = game.room ? 'Race ' + game.room : 'Solo game';
  $('h-game').textContent = game.you ? what : 'Watching ' + what;
  $('game-info').textContent = m.size + '×' + m.size + ', first to ' + m.target +
    (m.players.length > 1 ? ' · ' + m.players.length + ' players' : '');
  if (!game.you) { // spectators see every board at a good size
    others.classList.add('wide');
  } else {
    others.classList.remove('wide');
  }
  $('hint').textContent = game.you ? 'Arrow keys or WASD to move; swipe on a phone.'
    : 'You are watching: the boards move as their players play.';
  show('game');
  tickClock();
  if (game.you) attachSwipe(game.views.get(game.you).board.el);
  status();
}

function tickClock() {
  const g = app.game;
  const el = $('clock');
  if (!g || !g.timeLimit || g.ended) { el.hidden = true; return; }
  const left = Math.max(0, g.timeLimit * 1000 - (Date.now() - g.startedAt));
  el.hidden = false;
  el.textContent = Math.floor(left / 60000) + ':' + String(Math.floor(left / 1000) % 60).padStart(2, '0') + ' left';
  setTimeout(tickClock, 500);
}

function status() {
  const g = app.game;
  if (!g || !g.you) return;
  const p = g.views.get(g.you).p;
  $('game-status').textContent = 'Score ' + p.score + ', ' + plural(p.moves, 'move') + ', ' + p.status;
}

function onState(m) {
  const g = app.game;
  if (!g) return;
  const view = g.views.get(m.id);
  if (!view) return;
  const p = { id: m.id, name: m.name, board: m.board, score: m.score, moves: m.moves,
              max_tile: m.max_tile, status: m.status, bot: !!(m.bot || view.p.bot) };
  view.state(p, m.dir, m.spawn, m.moved);
  if (m.id === g.you && m.moved) g.moves.push({ dir: m.dir, board: m.board, score: m.score });
  if (m.id === g.you) status();
}

function onPlayer(m) {
  const g = app.game;
  if (!g) return;
  const view = g.views.get(m.id);
  if (!view) return;
  view.connected = m.connected;
  view.p.status = m.status || view.p.status;
  view.draw();
}

function move(dir) {
  const g = app.game;
  if (!g || g.ended || !g.you || app.view !== 'game') return;
  app.actionType = 'move';
  send({ type: 'move', dir });
}

document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && app.tv) {
    ev.preventDefault();
    tvStop();
    return;
  }
  if (ev.target && /^(INPUT|SELECT|TEXTAREA)$/.test(ev.target.tagName)) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const dir = DIRS[ev.key] || DIRS[ev.key.toLowerCase()];
  if (!dir || app.view !== 'game' || !app.game || !app.game.you) return;
  ev.preventDefault();
  move(dir);
});

function attachSwipe(el) {
  let x0 = 0;
  let y0 = 0;
  el.addEventListener('touchstart', (e) => {
    x0 = e.touches[0].clientX;
    y0 = e.touches[0].clientY;
  }, { passive: true });
  el.addEventListener('touchend', (e) => {
    const dx = e.changedTouches[0].clientX - x0;
    const dy = e.changedTouches[0].clientY - y0;
    if (Math.max(Math.abs(dx), Math.abs(dy)) < 24) return;
    move(Math.abs(dx) > Math.abs(dy) ? (dx > 0 ? 'right' : 'left') : (dy > 0 ? 'down' : 'up'));
  });
}

// -------------------------------------------------------------------- end ---

function onEnd(m) {
  const g = app.game;
  if (g) g.ended = true;
  app.lastEnd = m;
  show('end');
  // "Reconnected: your game goes on" is about a game that is over now.
  if (app.ws && app.ws.readyState === WebSocket.OPEN) setConn('Connected');
  const reasons = END_REASONS;
  const winner = (m.results || []).find((p) => p.id === m.winner);
  const mine = (m.results || []).find((p) => p.id === app.me);
  let text;
  if (!m.room) text = 'Game over: ' + (reasons[m.reason] || m.reason) + '.';
  else if (!winner) text = 'A draw: ' + (reasons[m.reason] || m.reason) + '.';
  else if (m.reason === 'forfeit' && mine && mine.status === 'left') text = 'You left the race: ' + winner.name + ' won.';
  else text = (winner.id === app.me ? 'You won' : winner.name + ' won') + ': ' + (reasons[m.reason] || m.reason) + '.';
  $('end-reason').textContent = text;
  drawRatings(m.ratings);
  const tb = $('ranking');
  tb.innerHTML = '';
  (m.results || []).forEach((p, i) => {
    const tr = document.createElement('tr');
    if (p.id === app.me) tr.className = 'you';
    for (const v of [i + 1, p.name + (p.id === app.me ? ' (you)' : ''), p.score, p.max_tile, p.moves, p.status]) {
      const td = document.createElement('td');
      td.textContent = v;
      tr.appendChild(td);
    }
    if (p.bot) tr.children[1].prepend(botMark());
    tb.appendChild(tr);
  });
  const boards = $('end-boards');
  boards.innerHTML = '';
  for (const p of m.results || []) new PlayerView(boards, p, p.board.length, false);
  $('b-rematch').hidden = !m.room || !(g && g.you);
  $('b-rematch').disabled = false;
  $('rematch-status').hidden = true;
  $('b-again').hidden = !!m.room;
  // Our own moves, as a record the replay viewer (and its analysis) takes.
  app.ownRecord = g && g.you && g.commit ? recordOfOwnGame(g, m) : null;
  $('b-end-analyse').hidden = !app.ownRecord;
  $('b-end-analyse').disabled = !analysisReady();
  $('b-end-analyse').textContent = analysisReady() ? 'Analyse my moves' : 'Analysis unavailable';
  $('b-end-analyse').title = analysisReady() ? '' : analysisNote();
  // Its link, once `history` names its id (the seed must be public).
  app.endGameId = null;
  $('b-end-link').hidden = true;
  $('b-end-link').textContent = 'Copy link';
  dropLinks($('v-end'));
  app.findEnd = g && g.commit && m.seed != null ? { commit: g.commit, tries: 0 } : null;
  if (app.findEnd) send({ type: 'history', limit: 20 });
  $('h-end').focus();
  verify(g, m).then((res) => {
    $('verify').textContent = res.text;
    $('verify').className = 'verify ' + res.cls;
  });
}

// Checks the commitment, then replays our own moves through the engine and
// compares every board the server sent with the engine's.
async function verify(g, end) {
  if (!g || !g.commit) return { text: 'Nothing to verify.', cls: '' };
  const seedText = String(end.seed);
  const digest = await sha256hex(end.salt + ':' + seedText);
  if (digest !== g.commit)
    return { text: 'NOT fair: the revealed seed does not match the commitment (' + digest.slice(0, 12) + '… ≠ ' + g.commit.slice(0, 12) + '…).', cls: 'bad' };
  if (!g.you) return { text: 'The seed matches the commitment (spectators verify the seed only).', cls: 'ok' };
  if (!app.engine) return { text: 'The seed matches the commitment; ' + app.engineNote + '.', cls: '' };
  if (!engineNew(g.size, seedText)) return { text: 'NOT verified: the engine refused the seed ' + seedText + '.', cls: 'bad' };
  if (!sameBoard(engineBoard(g.size), g.startBoard))
    return { text: 'NOT fair: the start board differs from the one the seed gives.', cls: 'bad' };
  for (let i = 0; i < g.moves.length; i++) {
    const mv = g.moves[i];
    if (app.engine.w_move(WASM_DIR[mv.dir]) !== 1)
      return { text: 'NOT verified: move ' + (i + 1) + ' (' + mv.dir + ') changes nothing in the engine.', cls: 'bad' };
    if (!sameBoard(engineBoard(g.size), mv.board))
      return { text: 'NOT fair: after move ' + (i + 1) + ' (' + mv.dir + ') the server\'s board differs from the engine\'s.', cls: 'bad' };
    if (app.engine.w_score() !== mv.score)
      return { text: 'NOT fair: the score after move ' + (i + 1) + ' differs.', cls: 'bad' };
  }
  const mine = (end.results || []).find((p) => p.id === g.you);
  if (mine && (mine.moves !== g.moves.length || mine.score !== app.engine.w_score()))
    return { text: 'Not verified: ' + (mine.moves - g.moves.length) + ' of your moves never reached this page (a dropped connection).', cls: 'bad' };
  return { text: 'verified: this game was fair (seed matches the commitment; ' + plural(g.moves.length, 'move') + ' replayed by the engine).', cls: 'ok' };
}

// The record of a game we played, as the protocol's `replay` gives one, from
// what the page saw: the seed `end` revealed and our moves that changed the board.
function recordOfOwnGame(g, end) {
  return { type: 'replay', size: g.size, target: g.target, room: g.room, seed: end.seed,
           salt: end.salt, commit: g.commit, reason: end.reason, winner: end.winner,
           results: (end.results || []).filter((p) => p.id === g.you),
           moves: { [g.you]: g.moves.map((mv) => mv.dir[0]).join('') } };
}

// ----------------------------------------------------------------- replay ---

// opts.back: 'end' when opened from the end screen (Back returns there);
// opts.analyse: start the analysis at once, of opts.player (an id).
function startReplay(rec, opts = {}) {
  stopAnalysis();
  show('replay');
  $('b-replay-back').textContent = opts.back === 'end' ? 'Back to the results' : 'Back to the lobby';
  app.replayBack = opts.back || 'lobby';
  if (app.link && !opts.linked) leaveLink();
  const box = $('replay-boards');
  box.innerHTML = '';
  $('r-moves').innerHTML = '';
  const results = rec.results || [];
  const id = rec.game != null ? rec.game : opts.game;
  $('h-replay').textContent = id != null ? 'Game ' + id : 'Replay';
  $('b-replay-link').hidden = id == null;
  $('b-replay-link').textContent = 'Copy link';
  $('b-replay-link').onclick = (e) => copyLink(e.target, id);
  dropLinks($('v-replay'));
  const winner = results.find((p) => p.id === rec.winner);
  $('replay-info').textContent = (rec.room ? 'Race ' + rec.room : 'Solo game') + ', ' + rec.size + '×' + rec.size +
    ' to ' + rec.target + ', ' + results.map((p) => p.name + ' ' + p.score).join(' vs ') +
    (rec.room ? (winner ? ' · ' + winner.name + ' won' : ' · no winner') : '') +
    (rec.reason ? ': ' + (END_REASONS[rec.reason] || rec.reason) : '') +
    (rec.ended ? ' · ' + new Date(rec.ended).toLocaleString() : '');
  drawReplayPlayers(rec);
  $('r-verify').textContent = '';
  $('r-verify').className = 'verify';
  if (!app.engine) {
    $('replay-info').textContent += ' — replays need the engine; ' + app.engineNote + '.';
    app.replay = null;
    drawAnalysisBox(null);
    showRecordCheck(rec, null);
    return;
  }
  // Every player's boards, move by move, from the seed through the engine.
  const tracks = [];
  let longest = 0;
  for (const p of results) {
    const dirs = (rec.moves && rec.moves[String(p.id)]) || '';
    if (!engineNew(rec.size, rec.seed)) break;
    const boards = [engineBoard(rec.size)];
    const used = [null];
    const scores = [0];
    for (const ch of dirs) {
      const dir = { u: 'up', d: 'down', l: 'left', r: 'right' }[ch];
      app.engine.w_move(WASM_DIR[dir]);
      boards.push(engineBoard(rec.size));
      used.push(dir);
      scores.push(app.engine.w_score());
    }
    longest = Math.max(longest, dirs.length);
    const view = new PlayerView(box, { ...p, board: boards[0], score: 0, moves: 0, status: 'playing' }, rec.size, false);
    tracks.push({ p, boards, used, view, scores });
  }
  app.replay = { tracks, step: 0, longest, timer: 0, rec, analysis: null };
  $('r-step').max = longest;
  // The player analysed: the one asked for, else the one with our name, else the first.
  const mine = tracks.findIndex((t) => t.p.id === opts.player);
  const named = tracks.findIndex((t) => t.p.name === app.name);
  app.replay.viewed = mine >= 0 ? mine : Math.max(0, named);
  drawAnalysisBox(app.replay);
  drawMoveList();
  replayTo(0);
  showRecordCheck(rec, tracks);
  if (opts.analyse && analysisReady()) analyse();
}

// The fairness check of a recorded game: the revealed seed matches the
// commitment, and every player's moves re-played from it by the engine give
// the recorded board, score, moves and tile (tracks null: no engine here).
async function checkRecord(rec, tracks) {
  if (rec.seed == null || !rec.salt) return { text: 'The seed is not public yet: nothing to check.', cls: '' };
  if (!rec.commit) return { text: 'This record has no commitment to check.', cls: '' };
  const digest = await sha256hex(rec.salt + ':' + String(rec.seed));
  if (digest !== rec.commit)
    return { text: 'NOT fair: the revealed seed does not match the commitment (' + digest.slice(0, 12) + '… ≠ ' + rec.commit.slice(0, 12) + '…).', cls: 'bad' };
  if (!tracks) return { text: 'The seed matches the commitment; ' + app.engineNote + '.', cls: '' };
  for (const t of tracks) {
    const k = t.boards.length - 1;
    const end = t.boards[k];
    const top = Math.max(...end.flat());
    if ((t.p.board && !sameBoard(end, t.p.board)) || t.scores[k] !== t.p.score || k !== t.p.moves ||
        (t.p.max_tile != null && top !== t.p.max_tile))
      return { text: 'NOT fair: ' + t.p.name + '\'s ' + plural(k, 'move') + ' re-played from the seed give ' +
               t.scores[k] + ' points, the record says ' + t.p.score + '.', cls: 'bad' };
  }
  return { text: 'verified: this game was fair (the seed matches the commitment made before the first move; ' +
           tracks.map((t) => plural(t.boards.length - 1, 'move') + ' of ' + t.p.name).join(', ') +
           ' re-played by the engine to the recorded results).', cls: 'ok' };
}

function showRecordCheck(rec, tracks) {
  const rp = app.replay;
  checkRecord(rec, tracks).then((res) => {
    if (app.replay !== rp) return; // another replay meanwhile
    $('r-verify').textContent = res.text;
    $('r-verify').className = 'verify ' + res.cls;
  });
}

// The viewed player's moves, numbered: a click goes to the position where the
// move is played; the next move is marked, and the analysis's verdicts too.
const ARROWS = { up: '↑', down: '↓', left: '←', right: '→' };
function drawMoveList() {
  const rp = app.replay;
  const ol = $('r-moves');
  ol.innerHTML = '';
  if (!rp || !rp.tracks[rp.viewed]) return;
  const t = rp.tracks[rp.viewed];
  $('moves-who').textContent = '(' + t.p.name + ')';
  const an = rp.analysis && rp.analysis.done && rp.analysis.track === rp.viewed && rp.analysis.worst ? rp.analysis : null;
  rp.moveButtons = [];
  rp.marked = null;
  const all = document.createDocumentFragment();
  for (let k = 1; k < t.used.length; k++) {
    const li = document.createElement('li');
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = k + ' ' + ARROWS[t.used[k]];
    b.setAttribute('aria-label', 'move ' + k + ', ' + t.used[k]);
    const v = an && an.verdicts[k - 1];
    if (v && v.givenUp > 0) {
      const rank = an.worst.indexOf(k - 1);
      b.classList.add(rank >= 0 ? 'worst' : 'differ');
      b.title = (rank >= 0 ? 'mistake ' + (rank + 1) + ': ' : '') + 'the AI plays ' + v.best + ' (' + givenUpText(v, an.target) + ' given up)';
    }
    b.onclick = () => replaySeek(k - 1);
    li.appendChild(b);
    all.appendChild(li);
    rp.moveButtons.push(b);
  }
  ol.appendChild(all);
  markNextMove();
}

function markNextMove() {
  const rp = app.replay;
  if (!rp || !rp.moveButtons) return;
  if (rp.marked) rp.marked.classList.remove('next');
  const b = rp.moveButtons[rp.step] || null;
  rp.marked = b;
  if (!b) return;
  b.classList.add('next');
  const ol = $('r-moves');
  const top = b.parentElement.offsetTop;
  if (top < ol.scrollTop || top + b.offsetHeight > ol.scrollTop + ol.clientHeight)
    ol.scrollTop = top - ol.clientHeight / 2;
}

// A move chosen by hand (a button, the slider, a mark, a mistake): a replay
// that is playing pauses there, rather than playing on from it.
function replaySeek(step) {
  const rp = app.replay;
  if (rp && rp.timer) replayPlay();
  replayTo(step);
}

// The players of a game who were accounts (the record's `accounts`, id -> name as
// registered) link to their profiles: the leaderboard view, opened on that profile.
function drawReplayPlayers(rec) {
  let line = $('replay-players');
  if (!line) {
    line = document.createElement('p');
    line.id = 'replay-players';
    $('replay-info').after(line);
  }
  line.innerHTML = '';
  const accounts = rec.accounts || {};
  const names = (rec.results || []).map((p) => accounts[String(p.id)]).filter(Boolean);
  line.hidden = !names.length;
  if (!names.length) return;
  line.append(names.length === 1 ? 'Profile: ' : 'Profiles: ');
  names.forEach((name, i) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'link profile-link';
    b.textContent = name;
    b.onclick = () => {
      if (app.replay && app.replay.timer) replayPlay(); // pauses
      stopAnalysis();
      if (app.link) leaveLink();
      openBoard(name);
    };
    if (i) line.append(' · ');
    line.append(b);
  });
}

// The game of the link this page was opened on, from /api/game/ID.
async function openLinkedGame() {
  show('replay');
  $('h-replay').textContent = 'Game ' + decodeURIComponent(app.link);
  $('replay-info').textContent = 'Loading the game…';
  try {
    const res = await fetch('/api/game/' + app.link, { cache: 'no-store' });
    const rec = await res.json();
    if (!res.ok || rec.type !== 'replay') throw new Error(rec.message || 'status ' + res.status);
    if (app.link) startReplay(rec, { linked: true });
  } catch (e) {
    $('replay-info').textContent = 'This game cannot be shown: ' + e.message + '.';
  }
}

// Leaves the game of the link: the address is the lobby's again.
function leaveLink() {
  app.link = null;
  history.replaceState(null, '', '/');
}

function replayTo(step) {
  const rp = app.replay;
  if (!rp) return;
  step = Math.max(0, Math.min(rp.longest, step));
  const forward = step === rp.step + 1;
  rp.step = step;
  for (const t of rp.tracks) {
    const k = Math.min(step, t.boards.length - 1);
    if (forward && k === step) t.view.board.update(t.boards[k], t.used[k], null);
    else t.view.board.set(t.boards[k]);
    t.view.p = { ...t.p, board: t.boards[k], moves: k, score: t.scores[k],
                 status: k === t.boards.length - 1 ? t.p.status : 'playing' };
    t.view.draw();
  }
  $('r-step').value = step;
  $('r-pos').textContent = 'move ' + step + ' of ' + rp.longest;
  $('r-step').style.setProperty('--done', (rp.longest ? 100 * step / rp.longest : 0) + '%');
  drawMoveNote();
  markNextMove();
}

// --------------------------------------------------------------- analysis ---

// The AI in the wasm module (an older module has the engine only).
const analysisReady = () => !!(app.engine && app.engine.w_ai_judge);
const analysisNote = () => app.engine ? 'analysis unavailable: this server\'s WebAssembly module has no AI'
  : (app.engineNote || 'verification unavailable: no WebAssembly engine').replace('verification', 'analysis');
const MISTAKES = 3;
const SLICE_MS = 40;   // the longest the page is busy between two frames
const SLICE_MOVES = 50;

// The analysis controls under the replay's: the button (or why there is none),
// the player analysed when there are several.
function drawAnalysisBox(rp) {
  const b = $('b-analyse');
  b.disabled = !rp || !analysisReady();
  b.textContent = b.disabled ? 'Analysis unavailable' : 'Analyse';
  b.title = b.disabled ? analysisNote() : '';
  $('a-status').textContent = b.disabled ? analysisNote() + '.' : '';
  $('a-status').className = 'a-status';
  $('a-mistakes').innerHTML = '';
  $('a-strip').innerHTML = '';
  $('a-strip').hidden = true;
  $('a-note').textContent = '';
  const sel = $('a-player');
  sel.innerHTML = '';
  const tracks = rp ? rp.tracks : [];
  tracks.forEach((t, i) => {
    const o = document.createElement('option');
    o.value = i;
    o.textContent = t.p.name;
    sel.appendChild(o);
  });
  if (rp) sel.value = rp.viewed;
  $('a-player-label').hidden = tracks.length < 2;
}

function stopAnalysis() {
  const rp = app.replay;
  if (rp && rp.analysis && !rp.analysis.done) rp.analysis.cancelled = true;
}

// The AI's verdict on every move of the viewed player, a slice at a time so
// that the page stays responsive; the engine's game is set up again from the
// seed at every slice (verification or another replay may have used it).
function analyse() {
  const rp = app.replay;
  if (!rp || !analysisReady()) return;
  stopAnalysis();
  const e = app.engine;
  const t = rp.tracks[rp.viewed];
  const dirs = t.used.slice(1);
  const an = { track: rp.viewed, verdicts: [], done: false, cancelled: false,
               started: performance.now(), ms: 0 };
  rp.analysis = an;
  $('b-analyse').disabled = true;
  $('a-player').disabled = true;
  $('a-mistakes').innerHTML = '';
  $('a-strip').innerHTML = '';
  $('a-strip').hidden = true;
  e.w_ai_init();
  // What decides the race (ai/judge.h, as race2048-replay --analyse): a player
  // who did not win by the target, or anyone whose race the clock ended, had
  // exactly the moves they made; a solo game and a winner by the target: no limit.
  const rec = rp.rec;
  const deadline = typeof rec.room === 'string' && !!rec.room &&
    ((rec.reason === 'target' && t.p.id !== rec.winner) || rec.reason === 'time');
  an.target = rec.target || 0;
  const slice = () => {
    if (an.cancelled || app.replay !== rp) return;
    const from = an.verdicts.length;
    if (!engineNew(rp.rec.size, rp.rec.seed)) return analysisFailed(an, 'the engine refused the seed');
    for (let k = 0; k < from; k++) e.w_move(WASM_DIR[dirs[k]]);
    const until = performance.now() + SLICE_MS;
    for (let k = from; k < dirs.length && k < from + SLICE_MOVES; k++) {
      const played = WASM_DIR[dirs[k]];
      if (e.w_ai_goal) e.w_ai_goal(an.target, deadline ? dirs.length - k : 0);
      const best = e.w_ai_judge(played);
      const givenUp = e.w_ai_given_up() / 1000;
      an.verdicts.push({ played: dirs[k], best: best >= 0 ? Object.keys(WASM_DIR)[best] : null,
                         givenUp, chance: !!e.w_ai_kind && e.w_ai_kind() === 1 });
      if (e.w_move(played) !== 1) return analysisFailed(an, 'move ' + (k + 1) + ' does not re-play');
      if (performance.now() > until) break;
    }
    const n = an.verdicts.length;
    $('a-status').textContent = 'Analysing ' + t.p.name + '\'s moves… ' + n + ' of ' + dirs.length;
    if (n < dirs.length) { setTimeout(slice, 0); return; }
    an.ms = performance.now() - an.started;
    an.done = true;
    finishAnalysis(rp, an);
  };
  $('a-status').textContent = 'Analysing ' + t.p.name + '\'s moves… 0 of ' + dirs.length;
  setTimeout(slice, 0);
}

function analysisFailed(an, why) {
  an.done = true;
  $('a-status').textContent = 'The analysis stopped: ' + why + '.';
  $('a-status').className = 'a-status bad';
  $('b-analyse').disabled = false;
  $('a-player').disabled = false;
}

// The three biggest mistakes (chance of the target before value, then largest
// first; of equal ones the earlier), as race2048-replay --analyse marks them.
function biggestMistakes(verdicts) {
  return verdicts.map((v, k) => k).filter((k) => verdicts[k].givenUp > 0)
    .sort((a, b) => verdicts[b].chance - verdicts[a].chance ||
                    verdicts[b].givenUp - verdicts[a].givenUp || a - b).slice(0, MISTAKES);
}

const pct = (x) => (x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toFixed(2)) + '\u00a0%';
// What a verdict gave up, in its unit: percentage points of the chance of
// reaching the target, or the share of the AI's value.
const givenUpText = (v, target) => v.chance
  ? pct(v.givenUp).replace('%', 'pts') + ' of the chance of reaching ' + target
  : pct(v.givenUp) + ' of the value';

function finishAnalysis(rp, an) {
  const v = an.verdicts;
  const worst = biggestMistakes(v);
  an.worst = worst;
  const differ = v.filter((x) => x.givenUp > 0).length;
  const name = rp.tracks[an.track].p.name;
  $('a-status').textContent = name + ': ' + plural(v.length, 'move') + ' analysed in ' +
    (an.ms < 1000 ? Math.round(an.ms) + ' ms' : (an.ms / 1000).toFixed(1) + ' s') + '; the AI would have played another ' + plural(differ, 'time') + '.';
  $('b-analyse').disabled = false;
  $('b-analyse').textContent = 'Analyse again';
  $('a-player').disabled = false;
  const ul = $('a-mistakes');
  ul.innerHTML = '';
  if (!worst.length) {
    const li = item('No mistakes: every move was as good as the AI\'s.', []);
    li.className = 'empty';
    ul.appendChild(li);
  }
  worst.forEach((k, i) => {
    const li = item('Mistake ' + (i + 1) + ': move ' + (k + 1) + ', ' + v[k].played + ', the AI plays ' +
                    v[k].best + ' (' + givenUpText(v[k], an.target) + ' given up)',
                    [['Go to move ' + (k + 1), () => replaySeek(k)]]);
    li.dataset.move = k + 1;
    ul.appendChild(li);
  });
  // The strip under the slider: a mark at every move the AI would play
  // otherwise (taller for more given up), numbered for the three biggest.
  const strip = $('a-strip');
  strip.innerHTML = '';
  const span = Math.max(1, rp.longest);
  v.forEach((x, k) => {
    if (!(x.givenUp > 0)) return;
    const rank = worst.indexOf(k);
    const mark = document.createElement('button');
    mark.type = 'button';
    mark.className = 'mark' + (rank >= 0 ? ' worst' : '');
    mark.style.left = (100 * k / span) + '%';
    mark.style.setProperty('--h', x.chance ? 1 : Math.min(1, 0.25 + x.givenUp / 10));
    if (rank >= 0) mark.textContent = rank + 1;
    mark.title = 'move ' + (k + 1) + ': ' + x.played + ', the AI plays ' + x.best + ' (' + givenUpText(x, an.target) + ')';
    mark.setAttribute('aria-label', mark.title);
    mark.onclick = () => replaySeek(k);
    strip.appendChild(mark);
  });
  strip.hidden = false;
  drawMoveList();
  drawMoveNote();
}

// Under the controls: the AI's verdict on the move about to be played from
// the position shown.
function drawMoveNote() {
  const rp = app.replay;
  const el = $('a-note');
  if (!rp || !rp.analysis || !rp.analysis.done || !rp.analysis.worst) { el.textContent = ''; return; }
  const an = rp.analysis;
  const v = an.verdicts[rp.step];
  if (!v) { el.textContent = 'The game is over: no move to judge.'; el.className = 'a-note'; return; }
  const rank = an.worst.indexOf(rp.step);
  el.textContent = 'Next, move ' + (rp.step + 1) + ': ' + v.played +
    (v.givenUp > 0 ? '; the AI plays ' + v.best + ' (' + givenUpText(v, an.target) + ' given up)' +
                     (rank >= 0 ? ': mistake ' + (rank + 1) : '')
                   : ', as good as the AI\'s move');
  el.className = 'a-note' + (rank >= 0 ? ' worst' : v.givenUp > 0 ? ' differ' : '');
}

function replayPlay() {
  const rp = app.replay;
  if (!rp) return;
  if (rp.timer) {
    clearInterval(rp.timer);
    rp.timer = 0;
    $('r-play').textContent = 'Play';
    return;
  }
  if (rp.step >= rp.longest) replayTo(0);
  $('r-play').textContent = 'Pause';
  rp.timer = setInterval(() => {
    if (rp.step >= rp.longest) { replayPlay(); return; }
    replayTo(rp.step + 1);
  }, 1000 / Number($('r-speed').value));
}


// ----------------------------------------------------------------- arenas ---

// m:ss of a number of milliseconds (0 and up).
function clockText(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
}

// When an arena starts or ends, from now (the server's clock in Unix ms).
function arenaWhen(a) {
  if (a.status === 'finished') return 'finished';
  return a.status === 'upcoming' ? 'starts in ' + clockText(a.starts - Date.now())
                                 : 'ends in ' + clockText(a.ends - Date.now());
}

// The first screen's list: upcoming, running and just finished arenas.
function drawArenas(arenas) {
  const ul = $('arenas');
  ul.innerHTML = '';
  if (!arenas.length) {
    const li = item('No arena right now: make one below.', []);
    li.className = 'empty';
    ul.appendChild(li);
  }
  // Running first, then upcoming, then finished (the server lists oldest first).
  const order = { running: 0, upcoming: 1, finished: 2 };
  const sorted = arenas.slice().sort((x, y) => order[x.status] - order[y.status]);
  for (const a of sorted.slice(0, 10)) {
    const buttons = [['Open', () => openArena(a.arena)]];
    if (a.status !== 'finished')
      buttons.unshift(['Join', (e) => { openArena(a.arena); arenaJoin(e.target); }]);
    const li = item('', buttons);
    li.classList.add('race');
    li.dataset.arena = a.arena;
    const who = document.createElement('span');
    who.className = 'race-who';
    who.textContent = a.name;
    const more = document.createElement('span');
    more.className = 'race-what';
    more.textContent = a.arena + ' · ' + a.status + ' · ' + arenaWhen(a) + ' · ' +
      plural(a.entrants || 0, 'entrant') + ' · races of ' + a.players;
    li.firstChild.append(who, more);
    ul.appendChild(li);
  }
}

// Opens the arena page of code (its `arena` object comes from the server).
function openArena(code) {
  app.arena = { code, a: app.arena && app.arena.code === code ? app.arena.a : null };
  history.replaceState(null, '', '#arena=' + code);
  showArena();
  send({ type: 'arena_results', arena: code });
}

// Enters the arena on screen: with the name typed when the page has none yet.
function arenaJoin(el) {
  const msg = { type: 'arena_join', arena: app.arena.code };
  if (app.named) act(el, msg);
  else enterWith(el, msg);
}

function onArena(m) {
  if (!app.arena || app.arena.code !== m.arena) {
    // The reply to arena_create opens its page; other arenas' updates are dropped.
    if (app.actionType !== 'arena_create') return;
    app.arena = { code: m.arena, a: null };
    history.replaceState(null, '', '#arena=' + m.arena);
  }
  // An update to everyone carries no `you` for who has not entered; a reply to
  // arena_results after the end keeps the row we had.
  const had = app.arena.a;
  app.arena.a = m;
  if (!m.you && had && had.you && m.status === 'finished') m.you = had.you;
  app.arena.updates = (app.arena.updates || 0) + 1;
  // The reply to our own request shows the page; an update only redraws it.
  const asked = /^arena_/.test(app.actionType);
  if (asked) app.actionType = '';
  if (app.view === 'arena' || (asked && !app.tv)) showArena();
}

// The arena page: the countdown, your rank, points and streak, the standings
// (the top 10 while it runs, up to 100 at the end), Join or Leave, the race on.
function showArena() {
  const ar = app.arena;
  if (!ar) return;
  if (app.view !== 'arena') show('arena');
  const a = ar.a;
  $('arena-link').textContent = location.origin + location.pathname + '#arena=' + ar.code;
  if (!a) {
    $('h-arena').textContent = 'Arena ' + ar.code;
    $('arena-info').textContent = 'Loading…';
    return;
  }
  $('h-arena').textContent = a.name + ' · ' + a.arena;
  $('arena-info').textContent = a.size + '×' + a.size + ' to ' + a.target + ' · races of up to ' +
    a.players + ' · ' + plural(a.entrants || 0, 'entrant') + ' · ' + a.status;
  const you = a.you;
  const racing = app.game && !app.game.ended && app.game.you && app.game.arena === a.arena;
  $('arena-you').textContent = you
    ? 'You: rank ' + you.rank + ' · ' + plural(you.points, 'point') + ' · ' + plural(you.races, 'race') +
      ' · streak ' + you.streak + (a.status === 'finished' ? '' : racing ? ' · racing'
        : you.waiting ? ' · waiting for the next race' : ' · not in the pool: press Join to race')
    : a.status === 'finished' ? 'You did not take part.' : 'Press Join to take part.';
  const open = a.status !== 'finished';
  $('b-arena-join').hidden = !open || !!(you && you.waiting) || racing;
  $('b-arena-leave').hidden = !open || !you || (!you.waiting && !racing);
  $('b-arena-race').hidden = !racing;
  $('h-standings').textContent = a.status === 'finished' ? 'Final standings' : 'Standings';
  const tb = $('arena-rows');
  tb.innerHTML = '';
  const rows = a.standings || [];
  if (!rows.length) {
    const tr = document.createElement('tr');
    const td = document.createElement('td');
    td.colSpan = 6;
    td.textContent = 'Nobody has entered yet.';
    tr.appendChild(td);
    tb.appendChild(tr);
  }
  for (const r of rows) {
    const tr = document.createElement('tr');
    if (you && r.id === you.id) tr.className = 'you';
    for (const v of [r.rank, r.name + (you && r.id === you.id ? ' (you)' : ''), r.points, r.races, r.wins,
                     r.streak >= 2 ? r.streak + ' 🔥' : r.streak])
      tr.appendChild(Object.assign(document.createElement('td'), { textContent: String(v) }));
    tb.appendChild(tr);
  }
  tickArena();
}

function tickArena() {
  const a = app.arena && app.arena.a;
  if (app.view !== 'arena' || !a) return;
  $('arena-clock').textContent = a.status === 'finished' ? 'Finished'
    : Date.now() < a.starts ? 'Starts in ' + clockText(a.starts - Date.now())
      : 'Ends in ' + clockText(a.ends - Date.now());
  clearTimeout(app.arenaTimer);
  if (a.status !== 'finished') app.arenaTimer = setTimeout(tickArena, 500);
}

// An arena race's `end`: its results go to the end screen (one click away),
// and the arena page comes back, where the next race starts by itself.
function arenaRaceEnded(m) {
  onEnd(m);
  $('b-rematch').hidden = true; // the arena pairs again: no rematch
  const mine = (m.results || []).findIndex((p) => p.id === app.me);
  const winner = (m.results || []).find((p) => p.id === m.winner);
  const last = $('arena-last');
  last.innerHTML = '';
  last.append('Last race: ' + (winner ? (winner.id === app.me ? 'you won' : winner.name + ' won') : 'a draw') +
              (mine >= 0 ? ', you were ' + (mine + 1) + ' of ' + m.results.length : '') + '. ');
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'link';
  b.textContent = 'See its boards';
  b.onclick = () => show('end');
  last.appendChild(b);
  last.hidden = false;
  showArena();
}

function wireArenas() {
  $('f-arena').onsubmit = (e) => {
    e.preventDefault();
    const f = e.target;
    const msg = { type: 'arena_create', name: f.elements.name.value.trim() || 'Arena',
                  ...formObj(f, ['minutes', 'players', 'starts_in']) };
    enterWith(f, msg);
  };
  $('b-arena-join').onclick = (e) => arenaJoin(e.target);
  $('b-arena-leave').onclick = (e) => act(e.target, { type: 'arena_leave', arena: app.arena.code });
  $('b-arena-race').onclick = () => { if (app.game && !app.game.ended) show('game'); };
  $('b-game-arena').onclick = () => showArena();
  $('b-arena-back').onclick = () => {
    history.replaceState(null, '', location.pathname);
    clearTimeout(app.arenaTimer);
    app.arena = null; // its updates are dropped until its next race starts
    if (app.named) enterLobby();
    else { show('name'); send({ type: 'rooms' }); send({ type: 'arenas' }); }
  };
}

// ------------------------------------------------------------------ wiring ---

function formObj(form, keys) {
  const o = {};
  for (const k of keys) o[k] = Number(form.elements[k].value);
  return o;
}

// The two "Race a bot" forms (first screen and lobby): the level list with a
// line about the one chosen, remembered for the next visit.
function wireBotForms() {
  const stored = Number(localStorage.getItem('race2048.botLevel'));
  const chosen = BOT_LEVELS.some((l) => l.level === stored) ? stored : BOT_LEVEL_DEFAULT;
  const forms = [$('f-bot'), $('f-lobby-bot')];
  const choose = (level) => {
    for (const f of forms) {
      f.elements.level.value = level;
      const lv = BOT_LEVELS.find((l) => l.level === level);
      f.querySelector('.level-note small').textContent = 'Level ' + lv.level + ', ' + lv.name + ': ' + lv.note + '.';
    }
  };
  for (const f of forms) {
    for (const lv of BOT_LEVELS) {
      const o = document.createElement('option');
      o.value = lv.level;
      o.textContent = lv.level + ' · ' + lv.name;
      f.elements.level.appendChild(o);
    }
    f.elements.level.onchange = (e) => {
      localStorage.setItem('race2048.botLevel', e.target.value);
      choose(Number(e.target.value));
    };
  }
  choose(chosen);
  const race = (f) => ({ type: 'create', players: 2, bots: 1, ...formObj(f, ['level', 'target']) });
  $('f-bot').onsubmit = (e) => { e.preventDefault(); enterWith(e.target, race(e.target)); };
  $('f-lobby-bot').onsubmit = (e) => { e.preventDefault(); act(e.target, race(e.target)); };
}

function wire() {
  $('name').value = app.name;
  // As "Race now" and "Race a bot": the name typed, or (left empty) the server's.
  $('f-name').onsubmit = (e) => {
    e.preventDefault();
    const name = $('name').value.trim();
    app.named = true;
    app.pending = false;
    if (!name) {
      app.name = '';
      enterLobby(); // the welcome already named us; a connection yet to open does so
      return;
    }
    app.name = name;
    localStorage.setItem('race2048.name', app.name);
    act(e.target, helloMsg(app.name));
  };
  $('b-keep').onclick = (e) => act(e.target, { type: 'register' });
  $('b-daily').onclick = (e) => act(e.target, { type: 'daily', size: 4 });
  $('b-forget').onclick = () => {
    forget();
    send({ type: 'hello', name: 'player-' + app.me }); // a guest again
  };
  $('b-top').onclick = () => openBoard(app.account && app.account.name);
  $('b-board-back').onclick = () => enterLobby();
  $('b-race-now').onclick = (e) => enterWith(e.target, { type: 'quick', players: 2, size: 4 });
  wireBotForms();
  $('b-rename').onclick = () => { show('name'); $('name').focus(); };
  $('f-quick').onsubmit = (e) => { e.preventDefault(); act(e.target, { type: 'quick', ...formObj(e.target, ['players', 'size']) }); };
  $('f-create').onsubmit = (e) => {
    e.preventDefault();
    act(e.target, { type: 'create', ...formObj(e.target, ['players', 'size', 'target', 'time_limit']) });
  };
  $('f-join').onsubmit = (e) => { e.preventDefault(); act(e.target, { type: 'join', room: $('code').value.trim().toUpperCase() }); };
  $('b-watch-code').onclick = (e) => {
    if ($('code').reportValidity()) act(e.target, { type: 'watch', room: $('code').value.trim().toUpperCase() });
  };
  $('f-solo').onsubmit = (e) => {
    e.preventDefault();
    app.lastSolo = formObj(e.target, ['size']);
    act(e.target, { type: 'solo', ...app.lastSolo });
  };
  $('b-rooms').onclick = () => send({ type: 'rooms' });
  $('b-history').onclick = () => send({ type: 'history', limit: 10 });
  $('b-wait-leave').onclick = () => send({ type: 'leave' });
  $('b-leave').onclick = () => { if (app.tv) tvStop(); else send({ type: 'leave' }); };
  $('b-tv').onclick = tvStart;
  wireArenas();
  $('b-rematch').onclick = (e) => act(e.target, { type: 'rematch' });
  $('b-again').onclick = (e) => act(e.target, { type: 'solo', ...app.lastSolo });
  $('b-lobby').onclick = () => { send({ type: 'leave' }); enterLobby(); };
  $('b-replay-back').onclick = () => {
    if (app.replay && app.replay.timer) replayPlay();
    stopAnalysis();
    if (app.link) leaveLink();
    if (app.replayBack === 'end' && app.lastEnd) show('end');
    else if (app.named) enterLobby();
    else { show('name'); send({ type: 'rooms' }); }
  };
  $('b-end-link').onclick = (e) => { if (app.endGameId != null) copyLink(e.target, app.endGameId); };
  $('b-copy-code').onclick = async () => {
    const code = $('wait-code').textContent;
    $('copy-code-note').textContent = (await copyText(code)) ? 'Copied ' + code : 'Select the code to copy it';
  };
  $('b-analyse').onclick = analyse;
  $('a-player').onchange = (e) => {
    if (!app.replay) return;
    stopAnalysis();
    app.replay.viewed = Number(e.target.value);
    app.replay.analysis = null;
    drawAnalysisBox(app.replay);
    drawMoveList();
    drawMoveNote();
  };
  $('b-end-analyse').onclick = () => {
    if (app.ownRecord) {
      startReplay(app.ownRecord, { back: 'end', analyse: true, player: app.game && app.game.you,
                                   game: app.endGameId != null ? app.endGameId : undefined });
    }
  };
  $('r-first').onclick = () => replaySeek(0);
  $('r-prev').onclick = () => replaySeek(app.replay ? app.replay.step - 1 : 0);
  $('r-next').onclick = () => replaySeek(app.replay ? app.replay.step + 1 : 0);
  $('r-last').onclick = () => replaySeek(app.replay ? app.replay.longest : 0);
  $('r-play').onclick = replayPlay;
  $('r-step').oninput = (e) => replaySeek(Number(e.target.value));
}

wire();
if (app.arenaFromLink) openArena(app.arenaFromLink);
else if (!app.name && !app.link) show('name');
// The open rooms change as people come and go: the screens that list them ask again.
// TV asks too while a race is on, to see it go if no `end` comes.
setInterval(() => {
  if (app.view === 'name' || app.view === 'lobby' || (app.tv && app.tv.room && !app.tv.ended))
    send({ type: 'rooms' });
  if (app.view === 'name') send({ type: 'arenas' });
  // Who has not entered gets no `arena` updates: the arena page asks.
  if (app.view === 'arena' && app.arena && !(app.arena.a && app.arena.a.you))
    send({ type: 'arena_results', arena: app.arena.code });
}, 5000);
loadEngine().finally(() => {
  if (app.link) openLinkedGame();
  connect();
});
