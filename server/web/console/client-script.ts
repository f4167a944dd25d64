/**
 * The console's one script (plain JavaScript, served at {@link CLIENT_SCRIPT_PATH}): polls its
 * page as JSON every two seconds and redraws the blocks (page-model.ts) with textContent,
 * never as HTML (a chart's SVG is the server's escaped markup); keeps a pasted token in
 * sessionStorage and sends it as `Authorization: Bearer` (no cookies); sends the action
 * buttons' requests and shows the answer's `message`; follows a build's log until complete.
 */

/** Where the module serves the script. */
export const CLIENT_SCRIPT_PATH = '/console/console.js';

/** Milliseconds between two polls of a page. */
export const CONSOLE_POLL_MS = 2000;

/** Milliseconds between two reads of a running build's log. */
export const LOG_POLL_MS = 1000;

export const CLIENT_SCRIPT = `'use strict';
(function () {
  var TOKEN_KEY = 'nodepool-token';
  var POLL_MS = ${CONSOLE_POLL_MS};
  var LOG_POLL_MS = ${LOG_POLL_MS};
  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
  function authHeaders() { var t = token(); return t ? { Authorization: 'Bearer ' + t } : {}; }
  function showSignedIn() { document.body.classList.toggle('signed-in', token() !== ''); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function buttons(actions) {
    return actions.map(function (a) {
      var b = el('button', a.label, 'action'); b.type = 'button';
      b.dataset.method = a.method; b.dataset.path = a.path;
      if (a.confirm) b.dataset.confirm = a.confirm;
      if (a.body) b.dataset.body = JSON.stringify(a.body);
      return b;
    });
  }
  function cell(c) {
    if (typeof c === 'string') return el('td', c);
    var td = el('td', undefined, [c.cls, c.pre ? 'pre' : ''].filter(Boolean).join(' '));
    if (c.bar !== undefined) {
      var bar = el('span', undefined, 'bar'); var fill = el('span');
      fill.style.width = Math.max(0, Math.min(100, Math.round(c.bar))) + '%'; bar.append(fill); td.append(bar);
    }
    if (c.text !== undefined) {
      if (c.href) { var a = el('a', c.text); a.href = c.href; td.append(a); } else td.append(document.createTextNode(c.text));
    }
    if (c.actions && c.actions.length) buttons(c.actions).forEach(function (b) { td.append(' ', b); });
    return td;
  }
  function block(b) {
    var out = [];
    if (b.title) out.push(el('h2', b.title));
    if (b.kind === 'heading') {
      var h = el('h2', b.text, 'heading'); h.id = b.id;
      if (b.actions && b.actions.length) { var s = el('span', undefined, 'actions'); buttons(b.actions).forEach(function (x) { s.append(' ', x); }); h.append(' ', s); }
      out.push(h);
    } else if (b.kind === 'table') {
      var t = el('table'); t.id = b.id;
      var head = el('tr'); b.columns.forEach(function (c) { head.append(el('th', c)); }); t.append(head);
      if (b.rows.length === 0) { var tr = el('tr'); var td = el('td', b.empty || 'none', 'empty'); td.colSpan = b.columns.length; tr.append(td); t.append(tr); }
      b.rows.forEach(function (r) { var row = el('tr'); r.forEach(function (c) { row.append(cell(c)); }); t.append(row); });
      out.push(t);
    } else if (b.kind === 'lines') {
      var ul = el('ul', undefined, 'lines'); ul.id = b.id;
      if (b.lines.length === 0) ul.append(el('li', b.empty || 'none', 'empty'));
      b.lines.forEach(function (l) { ul.append(el('li', l)); });
      out.push(ul);
    } else if (b.kind === 'chart') {
      var div = el('div', undefined, 'chart'); div.id = b.id;
      // The server's markup: every text in it is escaped (chart-svg.ts).
      div.innerHTML = b.svg;
      out.push(div);
    }
    return out;
  }
  function draw(page) {
    var main = document.getElementById('blocks');
    var nodes = [];
    page.blocks.forEach(function (b) { nodes = nodes.concat(block(b)); });
    main.replaceChildren.apply(main, nodes);
    var s = document.getElementById('summary');
    if (page.summary) { s.textContent = page.summary.text; s.className = page.summary.ok ? 'ok' : 'bad'; }
    document.getElementById('updated').textContent = 'updated ' + new Date(page.generated).toISOString().slice(11, 19) + ' UTC';
  }
  var timer = null;
  async function poll() {
    clearTimeout(timer);
    try {
      var u = new URL(location.href); u.searchParams.set('format', 'json');
      var res = await fetch(u, { cache: 'no-store', headers: authHeaders() });
      if (!res.ok) throw new Error('HTTP ' + res.status);
      draw(await res.json());
    } catch (err) {
      var s = document.getElementById('summary'); s.textContent = 'nodepool-server not answering (' + err.message + ')'; s.className = 'bad';
    } finally { timer = setTimeout(poll, POLL_MS); }
  }
  function message(text, ok) { var m = document.getElementById('message'); m.textContent = text; m.className = ok ? 'ok' : 'bad'; }
  async function act(b) {
    if (b.dataset.confirm && !confirm(b.dataset.confirm)) return;
    // Every write declares JSON, even with no body: the server refuses a write that does not.
    var headers = authHeaders(); headers['Content-Type'] = 'application/json';
    var init = { method: b.dataset.method, headers: headers, credentials: 'same-origin' };
    if (b.dataset.body) init.body = b.dataset.body;
    try {
      var res = await fetch(b.dataset.path, init);
      var text = await res.text(); var msg = text;
      try { var j = JSON.parse(text); if (j && typeof j.message === 'string') msg = j.message; } catch (e) { /* not JSON */ }
      message(b.textContent + ': ' + (msg || ('HTTP ' + res.status)), res.ok);
    } catch (err) { message(b.textContent + ': ' + err.message, false); }
    poll();
  }
  async function followLog(pre) {
    var status = document.getElementById('log-status');
    var offset = 0;
    for (;;) {
      try {
        var res = await fetch(pre.dataset.url + '?offset=' + offset + '&format=json', { cache: 'no-store', headers: authHeaders() });
        var text = await res.text(); var j = null;
        try { j = JSON.parse(text); } catch (e) { /* not JSON */ }
        if (!res.ok || !j) { status.textContent = 'log: ' + ((j && j.message) || text.trim() || ('HTTP ' + res.status)); }
        else {
          if (j.text) { var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4; pre.append(document.createTextNode(j.text)); if (atEnd) pre.scrollTop = pre.scrollHeight; }
          offset = j.next;
          status.textContent = j.complete ? 'log complete (' + j.size + ' bytes)' : 'following… (' + j.next + ' bytes)';
          if (j.complete) return;
        }
      } catch (err) { status.textContent = 'log: ' + err.message; }
      await new Promise(function (r) { setTimeout(r, LOG_POLL_MS); });
    }
  }
  document.getElementById('signin').addEventListener('submit', function (e) {
    e.preventDefault();
    var input = document.getElementById('token'); var t = input.value.trim(); input.value = '';
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    showSignedIn(); message(t ? 'signed in: the token is kept in this tab only' : 'no token given', t !== '');
  });
  document.getElementById('signout').addEventListener('click', function () { sessionStorage.removeItem(TOKEN_KEY); showSignedIn(); message('signed out', true); });
  document.addEventListener('click', function (e) {
    var b = e.target instanceof Element ? e.target.closest('button.action') : null;
    if (b) { e.preventDefault(); act(b); }
  });
  showSignedIn();
  timer = setTimeout(poll, POLL_MS);
  var log = document.getElementById('log');
  if (log) followLog(log);
})();
`;
