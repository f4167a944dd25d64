import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NODE_DEFAULTS, type NodeRecord } from '../../../../lib/store/models.js';
import { wantsJson } from '../../../../server/web/console/console-module.js';
import { cellHtml, escapeHtml, pageHtml } from '../../../../server/web/console/html.js';
import { byStateText, overviewPage, recentFailures, type OverviewData } from '../../../../server/web/console/overview-page.js';
import type { ConsolePage } from '../../../../server/web/console/page-model.js';
import { nodesPage, supplyCell } from '../../../../server/web/console/pool-pages.js';

const EVIL = '<img src=x onerror="alert(\'x\')">&';

function node(id: string, patch: Partial<NodeRecord>): NodeRecord {
  return { ...NODE_DEFAULTS, id, state: 'ready', stateTime: 0, created: 0, provider: 'p', pool: 'main', labels: ['small'], ...patch };
}

describe('console HTML', () => {
  it('escapeHtml escapes the five characters', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('cells: text, links, bars, kept lines and buttons, every value escaped', () => {
    assert.equal(cellHtml(EVIL), '<td>&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;</td>');
    assert.equal(cellHtml({ text: 'b"1', href: '/builds/b"1', cls: 'state-ready' }), '<td class="state-ready"><a href="/builds/b&quot;1">b&quot;1</a></td>');
    assert.equal(cellHtml({ bar: 140, text: '40%' }), '<td><span class="bar"><span style="width:100%"></span></span>40%</td>');
    assert.equal(cellHtml({ text: 'a\nb', pre: true }), '<td class="pre">a\nb</td>');
    assert.equal(cellHtml({ actions: [{ label: EVIL, method: 'DELETE', path: '/api/node/"1', confirm: EVIL, body: { reason: EVIL } }] }),
      '<td><button type="button" class="action" data-method="DELETE" data-path="/api/node/&quot;1" data-confirm="&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;"'
      + ' data-body="{&quot;reason&quot;:&quot;&lt;img src=x onerror=\\&quot;alert(&#39;x&#39;)\\&quot;&gt;&amp;&quot;}">&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;</button></td>');
  });

  it('a page escapes its title, summary, filters, headings, tables and lines, and links the script', () => {
    const page: ConsolePage = {
      title: EVIL, nav: '/nodes', generated: 0, summary: { text: EVIL, ok: false }, log: { url: '/api/build/"x/log' },
      filters: [{ name: 'label', label: 'Label', options: [EVIL], value: EVIL }],
      blocks: [
        { kind: 'heading', id: 'h', text: EVIL },
        { kind: 'table', id: 't', title: EVIL, columns: [EVIL], rows: [[EVIL]] },
        { kind: 'table', id: 'e', columns: ['A', 'B'], rows: [], empty: EVIL },
        { kind: 'lines', id: 'l', lines: [EVIL] },
      ],
    };
    const html = pageHtml(page);
    assert.ok(!html.includes('<img'), 'no markup from a value');
    assert.equal(html.split('&lt;img src=x').length - 1, 10, 'title twice, summary, option, heading, table title, column, cell, empty row, line');
    assert.match(html, /<td class="empty" colspan="2">/);
    assert.match(html, /<option selected>&lt;img/);
    assert.match(html, /<a href="\/nodes" class="current">Nodes<\/a>/);
    assert.match(html, /<pre id="log" data-url="\/api\/build\/&quot;x\/log"><\/pre>/);
    assert.match(html, /<script src="\/console\/console.js"><\/script>/);
  });

  it('answers JSON for ?format=json or an Accept of JSON without HTML', () => {
    const req = (q: string, accept?: string): Parameters<typeof wantsJson>[0] => ({ url: { pathname: '/', searchParams: new URLSearchParams(q) }, headers: accept ? { accept } : {} });
    assert.equal(wantsJson(req('format=json')), true);
    assert.equal(wantsJson(req('', 'application/json')), true);
    assert.equal(wantsJson(req('', 'text/html,application/json;q=0.9')), false);
    assert.equal(wantsJson(req('')), false);
  });
});

describe('console pages', () => {
  const base: OverviewData = {
    now: 100_000, started: true, loops: [], builds: [], uploads: [], nodes: [], requests: [], audit: [], samples: [], windowMs: 4 * 3_600_000,
  };

  it('the overview says ready, counts by state, and why the audit trail is missing', () => {
    const page = overviewPage({ ...base, nodes: [node('1', {}), node('2', { state: 'hold' }), node('3', {})], audit: { error: 'listAudit is not implemented' } });
    assert.deepEqual(page.summary, { text: 'ready: every loop passes', ok: true });
    const counts = page.blocks.find((b) => b.id === 'counts');
    assert.deepEqual(counts?.kind === 'table' ? counts.rows[0] : undefined, ['Nodes', '3', 'ready 2, hold 1']);
    assert.deepEqual(page.blocks.find((b) => b.id === 'audit'), { kind: 'lines', id: 'audit', title: 'Audit trail', lines: ['audit trail unavailable: listAudit is not implemented'] });
    assert.deepEqual(page.blocks.filter((b) => b.kind === 'chart').map((b) => b.title), ['Nodes by state, last 4 h', 'Requests by state, last 4 h']);
  });

  it('a failing loop makes the overview not ready', () => {
    const page = overviewPage({ ...base, loops: [{ name: 'deleter', passes: 3, consecutiveFailures: 3, lastPass: 1, lastSuccess: null, lastError: 'boom', runningSince: null, deadlineMs: 1000 }] });
    assert.deepEqual(page.summary, { text: 'deleter: 3 failed passes in a row (last: boom)', ok: false });
  });

  it('byStateText follows the given order, then the rest sorted', () => {
    assert.equal(byStateText({ used: 1, ready: 2, zz: 1, init: 3 }, ['init', 'ready']), 'init 3, ready 2, used 1, zz 1');
  });

  it('recent failures are newest first, bounded', () => {
    const failures = recentFailures({
      builds: [], uploads: [],
      nodes: [node('1', { state: 'failed', stateTime: 5, reason: 'boot' }), node('2', { state: 'aborted', stateTime: 9 }), node('3', { stateTime: 10 })],
      requests: [],
    }, 1);
    assert.deepEqual(failures.map((f) => [f.kind, f.id]), [['node aborted', '2']]);
  });

  it('nodes filter by provider, label and state', () => {
    const nodes = [node('1', { provider: 'a' }), node('2', { provider: 'b', labels: ['big'] }), node('3', { provider: 'a', state: 'hold' })];
    const ids = (f: { provider?: string; label?: string; state?: string }): string[] => {
      const page = nodesPage({ now: 0, nodes, locked: new Set(), filter: { provider: '', label: '', state: '', ...f } });
      const table = page.blocks[0];
      return table?.kind === 'table' ? table.rows.map((r) => r[0] as string) : [];
    };
    assert.deepEqual(ids({}), ['1', '2', '3']);
    assert.deepEqual(ids({ provider: 'a' }), ['1', '3']);
    assert.deepEqual(ids({ label: 'big' }), ['2']);
    assert.deepEqual(ids({ provider: 'a', state: 'hold' }), ['3']);
  });

  it('supply: ok, short, unserved, unconfigured', () => {
    const s = { label: 'l', ready: 1, allocated: 0, inUse: 0, building: 0, providers: ['p/main'] };
    assert.deepEqual(supplyCell({ ...s, minReady: 1 }), { text: 'ok', cls: 'state-ok' });
    assert.deepEqual(supplyCell({ ...s, minReady: 3 }), { text: 'short 2', cls: 'state-short' });
    assert.deepEqual(supplyCell({ ...s, minReady: 3, providers: [] }), { text: 'no pool serves it', cls: 'state-failed' });
    assert.deepEqual(supplyCell({ ...s, minReady: null }), { text: 'not configured', cls: 'state-hold' });
  });
});
