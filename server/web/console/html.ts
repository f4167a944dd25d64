/**
 * The console's pages as HTML (issue 25 §3): the layout (navigation, sign-in field, message
 * line), a page model's blocks as tables and lists, and the page's script. Every value goes
 * through {@link escapeHtml}; a chart's markup is made by chart-svg.ts. Pure.
 */
import { CLIENT_SCRIPT_PATH } from './client-script.js';
import type { ActionButton, Block, Cell, ConsolePage, FilterField } from './page-model.js';
import { CONSOLE_STYLE } from './style.js';

/** The pages in the navigation. */
export const CONSOLE_NAV: ReadonlyArray<{ path: string; label: string }> = [
  { path: '/', label: 'Overview' }, { path: '/images', label: 'Images' }, { path: '/nodes', label: 'Nodes' },
  { path: '/requests', label: 'Requests' }, { path: '/labels', label: 'Labels' },
];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text safe in HTML content and in quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** Action buttons (hidden by the style until signed in). */
export function actionsHtml(actions: readonly ActionButton[]): string {
  return actions.map((a) => `<button type="button" class="action" data-method="${a.method}" data-path="${escapeHtml(a.path)}"`
    + `${a.confirm ? ` data-confirm="${escapeHtml(a.confirm)}"` : ''}${a.body ? ` data-body="${escapeHtml(JSON.stringify(a.body))}"` : ''}>`
    + `${escapeHtml(a.label)}</button>`).join(' ');
}

/** One table cell. */
export function cellHtml(cell: Cell): string {
  if (typeof cell === 'string') return `<td>${escapeHtml(cell)}</td>`;
  const cls = [cell.cls, cell.pre ? 'pre' : undefined].filter(Boolean).join(' ');
  let inner = '';
  if (cell.bar !== undefined) inner += `<span class="bar"><span style="width:${Math.max(0, Math.min(100, Math.round(cell.bar)))}%"></span></span>`;
  if (cell.text !== undefined) inner += cell.href ? `<a href="${escapeHtml(cell.href)}">${escapeHtml(cell.text)}</a>` : escapeHtml(cell.text);
  if (cell.actions?.length) inner += `${inner ? ' ' : ''}${actionsHtml(cell.actions)}`;
  return `<td${cls ? ` class="${escapeHtml(cls)}"` : ''}>${inner}</td>`;
}

/** One block of a page. */
export function blockHtml(block: Block): string {
  const title = 'title' in block && block.title ? `<h2>${escapeHtml(block.title)}</h2>\n` : '';
  switch (block.kind) {
    case 'heading':
      return `<h2 class="heading" id="${escapeHtml(block.id)}">${escapeHtml(block.text)}${block.actions?.length ? ` <span class="actions">${actionsHtml(block.actions)}</span>` : ''}</h2>`;
    case 'table': {
      const head = `<tr>${block.columns.map((c) => `<th>${escapeHtml(c)}</th>`).join('')}</tr>`;
      const rows = block.rows.length === 0
        ? `<tr><td class="empty" colspan="${block.columns.length}">${escapeHtml(block.empty ?? 'none')}</td></tr>`
        : block.rows.map((r) => `<tr>${r.map(cellHtml).join('')}</tr>`).join('\n');
      return `${title}<table id="${escapeHtml(block.id)}">\n${head}\n${rows}\n</table>`;
    }
    case 'lines': {
      const items = block.lines.length === 0 ? [`<li class="empty">${escapeHtml(block.empty ?? 'none')}</li>`] : block.lines.map((l) => `<li>${escapeHtml(l)}</li>`);
      return `${title}<ul class="lines" id="${escapeHtml(block.id)}">${items.join('')}</ul>`;
    }
    case 'chart':
      return `${title}<div class="chart" id="${escapeHtml(block.id)}">${block.svg}</div>`;
  }
}

function filtersHtml(filters: readonly FilterField[]): string {
  const selects = filters.map((f) => `<label>${escapeHtml(f.label)} <select name="${escapeHtml(f.name)}"><option value="">all</option>`
    + f.options.map((o) => `<option${o === f.value ? ' selected' : ''}>${escapeHtml(o)}</option>`).join('')
    + '</select></label>').join(' ');
  return `<form class="filters" method="get">${selects} <button type="submit">Filter</button></form>`;
}

/** The whole page. */
export function pageHtml(page: ConsolePage): string {
  const nav = CONSOLE_NAV.map((n) => `<a href="${n.path}"${n.path === page.nav ? ' class="current"' : ''}>${n.label}</a>`).join('');
  const summary = page.summary ? `<span id="summary" class="${page.summary.ok ? 'ok' : 'bad'}">${escapeHtml(page.summary.text)}</span>` : '<span id="summary"></span>';
  const log = page.log
    ? `<h2>Log</h2>\n<pre id="log" data-url="${escapeHtml(page.log.url)}"></pre>\n<div id="log-status"><a href="${escapeHtml(page.log.url)}">the log as text</a> (followed live with JavaScript)</div>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)} · Nodepool</title>
<style>${CONSOLE_STYLE}</style>
</head>
<body>
<header><nav><strong>Nodepool</strong>${nav}</nav>
<form id="signin"><input id="token" type="password" placeholder="paste a token to act" autocomplete="off"> <button type="submit">Sign in</button></form>
<span id="signed-in">signed in <button type="button" id="signout">Sign out</button></span>
</header>
<h1>${escapeHtml(page.title)}</h1>
<div class="meta">${summary} <span id="updated">as of ${escapeHtml(new Date(page.generated).toISOString().slice(11, 19))} UTC</span> <span class="signin-hint">sign in to act</span></div>
<div id="message" role="status"></div>
${page.filters ? filtersHtml(page.filters) : ''}
<main id="blocks">
${page.blocks.map(blockHtml).join('\n')}
</main>
${log}
<script src="${CLIENT_SCRIPT_PATH}"></script>
</body>
</html>
`;
}
