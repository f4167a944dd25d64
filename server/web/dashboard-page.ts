/**
 * The former dashboard: at `/dashboard` where the console (server/web/console/) serves `/`, and
 * at `/` of a web server without the console. One self-contained HTML page (no framework, no external files) that
 * polls `/dashboard.json` every two seconds and redraws its tables: failing loops, builds,
 * uploads with progress bars and reasons (multi-line ones kept as lines), the upload targets
 * that need attention (validating, failing), pins and revoked builds with each build's and
 * upload's rollout (issue 24), nodes by provider and label, nodes with their addresses, requests.
 * Every value is put in with textContent, never as HTML.
 */
import { createHash } from 'node:crypto';

/** Seconds between two polls of the page. */
export const DASHBOARD_POLL_MS = 2000;

const STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fafafa; }
h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
#status { font-weight: 600; } .ok { color: #186a1e; } .bad { color: #b3261e; }
table { border-collapse: collapse; background: #fff; min-width: 40em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; } td.empty { color: #888; font-style: italic; }
.bar { display: inline-block; width: 12em; height: .8em; background: #e4e4e4; vertical-align: middle; margin-right: .5em; }
.bar > span { display: block; height: 100%; background: #2f6fdf; }
.state-ready { color: #186a1e; } .state-failed, .state-lost { color: #b3261e; } .state-building, .state-uploading { color: #2f6fdf; }
.state-validating { color: #8a5a00; }
td.reason { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: .85em; max-width: 60em; }
td.reason > div { max-height: 8em; overflow: auto; }
#upload-attention, #rollout { margin: .4em 0 0; padding-left: 1.2em; } #upload-attention li, #rollout li { white-space: pre-wrap; }
#updated { color: #666; font-size: .9em; }`;

const SCRIPT = `
const POLL_MS = ${DASHBOARD_POLL_MS};
function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; }
function table(id, columns, rows, cell) {
  const t = document.getElementById(id); t.replaceChildren();
  const head = el('tr'); for (const c of columns) head.append(el('th', c)); t.append(head);
  if (rows.length === 0) { const tr = el('tr'); const td = el('td', 'none', 'empty'); td.colSpan = columns.length; tr.append(td); t.append(tr); return; }
  for (const r of rows) { const tr = el('tr'); for (const c of cell(r)) tr.append(c instanceof Node ? c : el('td', c)); t.append(tr); }
}
function stateCell(s) { return el('td', s, 'state-' + s); }
function progressCell(u) {
  const td = el('td'); if (u.percent === null) return td;
  const bar = el('span', undefined, 'bar'); const fill = el('span'); fill.style.width = u.percent + '%'; bar.append(fill);
  td.append(bar, el('span', u.transfer)); return td;
}
function reasonCell(r) { const td = el('td', undefined, 'reason'); if (r) td.append(el('div', r)); return td; }
function list(id, items) { const ul = document.getElementById(id); ul.replaceChildren(...items.map((i) => el('li', i))); }
function draw(d) {
  const status = document.getElementById('status');
  status.textContent = d.ready ? 'all loops pass' : (d.started ? d.failing.length + ' loop(s) failing' + (d.stuck.length ? ', ' + d.stuck.length + ' stuck' : '') : 'starting');
  status.className = d.ready ? 'ok' : 'bad';
  table('failing', ['Loop', 'Failed passes in a row', 'Last error'], d.failing.concat(d.stuck.map((s) => ({ loop: s.loop, consecutiveFailures: 0, lastError: 'pass running for ' + Math.round(s.runningMs / 1000) + ' s, past its bound of ' + Math.round(s.deadlineMs / 1000) + ' s' }))), (f) => [f.loop, f.consecutiveFailures, f.lastError || '']);
  table('builds', ['Build', 'Diskimage', 'State', 'Age', 'Reason', 'Pinned', 'Revoked'], d.builds, (b) => [b.id, b.diskimage, stateCell(b.state), b.age, b.reason || '', b.pinned, b.revoked]);
  table('uploads', ['Upload', 'Build', 'Provider', 'State', 'Age', 'Progress', 'Reason', 'Rollout', 'Launches', 'Launch failures'], d.uploads, (u) => [u.id, u.buildId, u.provider, stateCell(u.state), u.age, progressCell(u), reasonCell(u.reason), u.rollout || '', u.launches, u.launchFailures]);
  list('upload-attention', d.uploadAttention);
  list('rollout', d.rolloutLines.length ? d.rolloutLines : ['no pins, no revoked builds']);
  table('node-counts', ['Provider', 'Label', 'Nodes by state'], d.nodeCounts, (c) => [c.provider, c.label, Object.entries(c.states).map(([s, n]) => s + ' ' + n).join(', ')]);
  table('nodes', ['Node', 'Provider', 'Label', 'Server ID', 'Address', 'State', 'Age'], d.nodes, (n) => [n.id, n.provider, n.labels, n.externalId, n.address, stateCell(n.state), n.age]);
  table('requests', ['Request', 'State', 'Labels', 'Requestor', 'Nodes', 'Age'], d.requests, (r) => [r.id, stateCell(r.state), r.labels, r.requestor, r.nodes, r.age]);
  document.getElementById('updated').textContent = 'updated ' + new Date(d.generated).toLocaleTimeString();
}
async function poll() {
  try {
    const res = await fetch('dashboard.json', { cache: 'no-store' });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    draw(await res.json());
  } catch (err) {
    const s = document.getElementById('status'); s.textContent = 'nodepool-server not answering (' + err.message + ')'; s.className = 'bad';
  } finally { setTimeout(poll, POLL_MS); }
}
poll();`;

/** The `script-src` source of the page's one inline script (its SHA-256), for the Content-Security-Policy. */
export const DASHBOARD_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(SCRIPT, 'utf8').digest('base64')}'`;

/** The page's HTML. */
export function dashboardPage(): string {
  const section = (title: string, id: string): string => `<h2>${title}</h2>\n<table id="${id}"></table>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Nodepool</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Nodepool</h1>
<div><span id="status">loading…</span> <span id="updated"></span></div>
${section('Failing loops', 'failing')}
${section('Images: builds', 'builds')}
${section('Images: uploads', 'uploads')}
<ul id="upload-attention"></ul>
<h2>Images: pins and revoked builds</h2>
<ul id="rollout"></ul>
${section('Nodes by provider and label', 'node-counts')}
${section('Nodes', 'nodes')}
${section('Requests', 'requests')}
<script>${SCRIPT}</script>
</body>
</html>
`;
}
