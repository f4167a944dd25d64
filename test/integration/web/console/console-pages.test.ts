/**
 * The operator console in a real headless Chromium (playwright-core, Debian's chromium) against
 * a real WebServer and SQLite store: every page draws its tables from the store's records (and
 * reads without JavaScript), hostile labels and reasons stay text, a count changes on the
 * overview without a reload, the charts fill from the sampler, the audit trail shows, signing
 * in keeps the token in sessionStorage and a button sends it as a bearer token, and a build's
 * log is followed until complete. Routes standing in for the write API and the build logs
 * (served by other modules) record what they are sent. With NODEPOOL_SCREENSHOTS=1 each page
 * is written to docs/console/<page>.png.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { waitFor } from '../../../../lib/lifecycle.js';
import type { Route } from '../../../../server/web/routes.js';
import { HOSTILE, seedStore, startConsoleEnv, type ConsoleEnv, type Seeded } from './console-env.js';

const SCREENSHOTS = process.env.NODEPOOL_SCREENSHOTS === '1';
const TOKEN = 'console-test-token';
const WAIT = { timeout: 15_000 };

describe('the operator console in headless Chromium', () => {
  let env: ConsoleEnv;
  let seeded: Seeded;
  let browser: Browser;
  const sent: Array<{ path: string; authorization: string | undefined }> = [];
  const buildLog = { text: '', complete: false };

  const routes: Route[] = [
    {
      method: 'POST', pattern: '/api/node/:node/hold',
      handle: (req, { node }) => {
        sent.push({ path: req.url.pathname, authorization: req.headers.authorization });
        return Promise.resolve({ status: 200, contentType: 'application/json', body: JSON.stringify({ ok: true, message: `node ${node} held` }) });
      },
    },
    {
      method: 'GET', pattern: '/api/build/:build/log',
      handle: (req) => {
        const offset = Number(req.url.searchParams.get('offset') ?? 0);
        const body = { offset, next: buildLog.text.length, size: buildLog.text.length, complete: buildLog.complete, text: buildLog.text.slice(offset) };
        return Promise.resolve({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
      },
    },
  ];

  async function open(p: string): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(env.url(p));
    return page;
  }

  /**
   * Waits until the element's text matches (the page's script redraws every two seconds). Read
   * through a locator: the pages' Content-Security-Policy forbids the string evaluation
   * `page.waitForFunction` needs.
   */
  async function waitForText(page: Page, selector: string, re: RegExp): Promise<void> {
    const text = (): Promise<string> => page.locator(selector).first().innerText({ timeout: 1000 }).catch(() => '');
    await waitFor(async () => re.test(await text()), { timeoutMs: WAIT.timeout, intervalMs: 100, what: `${selector} matching ${re.source}` });
  }

  async function screenshot(page: Page, name: string): Promise<void> {
    if (SCREENSHOTS) await page.screenshot({ path: path.resolve('docs/console', `${name}.png`), fullPage: true });
  }

  before(async () => {
    env = await startConsoleEnv({ routes, console: { sampleIntervalMs: 200, sampleCapacity: 600 } });
    seeded = await seedStore(env.store);
    const t = Date.now();
    env.loops.push(
      { name: 'image-lifecycle', passes: 12, consecutiveFailures: 0, lastPass: t, lastSuccess: t, lastError: null, runningSince: null, deadlineMs: 300_000 },
      { name: 'pool-worker:cloud-a/main', passes: 30, consecutiveFailures: 2, lastPass: t, lastSuccess: t - 60_000, lastError: 'quota lookup failed: 503', runningSince: null, deadlineMs: 300_000 },
    );
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  });

  after(async () => {
    await browser?.close();
    await env?.close();
  });

  it('the overview shows health, loops, counts, failures and charts that fill from the sampler', async () => {
    const page = await open('/');
    assert.match(await page.locator('#summary').innerText(), /pool-worker:cloud-a\/main: 2 failed passes in a row/);
    assert.match(await page.locator('#loops').innerText(), /pool-worker:cloud-a\/main\tfailing\t30\t2\t.*quota lookup failed: 503/);
    const counts = await page.locator('#counts').innerText();
    assert.match(counts, /Nodes\t3\tready 1, in-use 1, hold 1/);
    assert.match(counts, /Requests\t3\trequested 1, fulfilled 1, failed 1/);
    assert.match(counts, /Builds\t3\tbuilding 1, ready 1, failed 1/);
    const failures = await page.locator('#failures').innerText();
    assert.match(failures, /request failed\t.*no provider serves label gpu/);
    assert.match(failures, new RegExp(`build failed\\t${seeded.failed}`));
    // Two samples make a line (200 ms apart); the poll redraws the chart.
    await page.waitForSelector('#chart-nodes polyline', WAIT);
    await page.waitForSelector('#chart-requests polyline', WAIT);
    assert.match(await page.locator('#chart-nodes').innerText(), /ready 1/);
    assert.equal(await page.locator('h2', { hasText: 'Nodes by state' }).innerText(), 'Nodes by state, last 2 min');
    await page.close();
  });

  it('a count changes on the overview without a reload', async () => {
    const page = await open('/');
    await page.evaluate('window.marker = 42');
    assert.match(await page.locator('#counts').innerText(), /Nodes\t3\t/);
    const extra = await env.store.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['large'] });
    await waitForText(page, '#counts', /Nodes\t4\t.*building 1/);
    assert.equal(await page.evaluate<number>('window.marker'), 42, 'the page was not reloaded');
    await env.store.deleteNode(extra.id);
    await page.close();
  });

  it('the audit trail shows the newest writes', async () => {
    await env.store.recordAudit({
      time: Date.now(), user: 'alice', role: 'operator', authenticator: 'local', action: 'node-hold', target: seeded.nodes.ready,
      method: 'POST', path: `/api/node/${seeded.nodes.ready}/hold`, status: 200, result: 'ok', message: `node ${seeded.nodes.ready} held`, remote: '127.0.0.1',
    });
    const page = await open('/');
    await waitForText(page, '#audit', /alice/);
    assert.match(await page.locator('#audit').innerText(), new RegExp(`alice\\toperator\\tnode-hold\\t${seeded.nodes.ready}\\tok\\t200\\tnode ${seeded.nodes.ready} held`));
    await page.close();
  });

  it('/images shows builds, the provider × build matrix with progress bars, validation and rollout state', async () => {
    const page = await open('/images');
    const builds = await page.locator('#image-0-builds').innerText();
    assert.match(builds, new RegExp(`${seeded.ready}\\tready\\t\\d\\d:\\d\\d:\\d\\d:\\d\\d\\tqcow2 1\\.2 GiB\\tbuilder-1`));
    assert.match(builds, new RegExp(`${seeded.building}\\tbuilding\\t.*\\tqcow2, raw`));
    assert.match(builds, /revoked: broke boot <img/);
    const matrix = await page.locator('#image-0-uploads').innerText();
    assert.match(matrix, /cloud-a\t.*ready · promoted/);
    assert.match(matrix, /cloud-b\t.*uploading · 0\.4\/1\.0 GiB 40% 50 MiB\/s/);
    assert.match(await page.locator('#image-0-uploads .bar > span').getAttribute('style') ?? '', /^width: ?40%;?$/);
    assert.match(await page.locator('#image-0-validation').innerText(), /cloud-b\tlast validation failed .*\tvalidation: command exited 1/);
    const state = await page.locator('#image-0-state').innerText();
    assert.match(state, /uploads to cloud-b paused since .* \(maintenance window\)/);
    assert.match(state, new RegExp(`deb: build ${seeded.failed} revoked since`));
    await screenshot(page, 'images');
    await page.close();
  });

  it('/nodes filters by provider, label and state through the query, without JavaScript too', async () => {
    const page = await open('/nodes?provider=cloud-a&state=in-use');
    const text = await page.locator('#nodes').innerText();
    assert.match(text, new RegExp(`${seeded.nodes.inUse}\\tcloud-a\\tmain\\tsmall\\tin-use\\t.*198\\.51\\.100\\.7\\tsrv-1`));
    assert.doesNotMatch(text, new RegExp(seeded.nodes.ready));
    await page.close();
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
    const plain = await context.newPage();
    await plain.goto(env.url('/nodes'));
    assert.match(await plain.locator('#nodes').innerText(), new RegExp(`${seeded.nodes.ready}\\thosts\\tmain\\tsmall\\tready`));
    await plain.selectOption('select[name=label]', 'small');
    await Promise.all([plain.waitForURL(/label=small/), plain.click('form.filters button')]);
    const filtered = await plain.locator('#nodes').innerText();
    assert.match(filtered, new RegExp(seeded.nodes.inUse));
    assert.doesNotMatch(filtered, new RegExp(`${seeded.nodes.hostile}\\t`));
    await context.close();
    await screenshot(await open('/nodes'), 'nodes');
  });

  it('/requests and /labels show requests, min-ready and the current supply', async () => {
    const requests = await open('/requests');
    const r = await requests.locator('#requests').innerText();
    assert.match(r, /fulfilled\t100\tsmall\tzuul\t\t\d+\t/);
    assert.match(r, /requested\t100\tlarge\tnodepool:min-ready/);
    assert.match(r, /failed\t100\tgpu\tzuul\t.*no provider serves label gpu/);
    await screenshot(requests, 'requests');
    const labels = await open('/labels');
    const l = await labels.locator('#labels').innerText();
    assert.match(l, /small\t2\t1\t0\t1\t0\tshort 1\t\thosts\/main/);
    assert.match(l, /large\t0\t0\t0\t0\t0\tno pool serves it/);
    assert.match(await labels.locator('#summary').innerText(), /1 label below min-ready/);
    await screenshot(labels, 'labels');
    await requests.close();
    await labels.close();
  });

  it('hostile labels and reasons stay text, in the served HTML and after the redraw', async () => {
    for (const p of ['/nodes', '/images', `/builds/${seeded.failed}`, '/']) {
      const html = await (await fetch(env.url(p))).text();
      assert.ok(!html.includes(HOSTILE) && !html.includes('<b>bold'), `${p}: the served HTML escapes the value`);
      const page = await open(p);
      await waitForText(page, '#updated', /^updated /);
      assert.equal(await page.locator('main img, main b').count(), 0, `${p}: no element made from a value`);
      assert.notEqual(await page.title(), 'pwned');
      await page.close();
    }
    const nodes = await open('/nodes');
    assert.match(await nodes.locator('#nodes').innerText(), /<img src=x onerror="document\.title='pwned'"><b>bold<\/b>\thold/);
    await nodes.close();
  });

  it('signing in keeps the token in sessionStorage and a button sends it as a bearer token', async () => {
    const page = await open('/nodes');
    const hold = page.locator('#nodes tr', { hasText: seeded.nodes.ready }).locator('button', { hasText: 'Hold' });
    assert.equal(await hold.isVisible(), false, 'no buttons before signing in');
    assert.equal(await page.locator('.signin-hint').isVisible(), true);
    await page.fill('#token', TOKEN);
    await page.click('#signin button');
    assert.equal(await page.evaluate<string | null>("sessionStorage.getItem('nodepool-token')"), TOKEN);
    assert.equal(await page.locator('#token').inputValue(), '', 'the field is cleared');
    await hold.waitFor({ state: 'visible', ...WAIT });
    await hold.click();
    await waitForText(page, '#message', /held/);
    assert.equal(await page.locator('#message').innerText(), `Hold: node ${seeded.nodes.ready} held`);
    assert.deepEqual(sent, [{ path: `/api/node/${seeded.nodes.ready}/hold`, authorization: `Bearer ${TOKEN}` }]);
    assert.ok(!(await page.content()).includes(TOKEN), 'the token is not put in the page');
    await page.close();
  });

  it('the build page shows the build, its uploads and follows its log until complete', async () => {
    buildLog.text = 'line 1: starting dib\n';
    const page = await open(`/builds/${seeded.ready}`);
    assert.match(await page.locator('#build').innerText(), /Formats and sizes\tqcow2 1\.2 GiB/);
    const uploads = await page.locator('#uploads').innerText();
    assert.match(uploads, new RegExp(`${seeded.uploading}\\tcloud-b\\tuploading\\t.*0\\.4/1\\.0 GiB 40%`));
    assert.match(uploads, /cloud-a\tready\t.*img-1\tpromoted\t5 ok, 0 failed/);
    await waitForText(page, '#log', /line 1/);
    buildLog.text += 'line 2: finished\n';
    buildLog.complete = true;
    await waitForText(page, '#log-status', /log complete/);
    assert.equal(await page.locator('#log').textContent(), 'line 1: starting dib\nline 2: finished\n');
    // Signed in, the page shows its buttons.
    await page.fill('#token', TOKEN);
    await page.click('#signin button');
    await page.locator('#build-actions button', { hasText: 'Revoke' }).waitFor({ state: 'visible', ...WAIT });
    await screenshot(page, 'build');
    const missing = await fetch(env.url('/builds/deb-9999999999'));
    assert.equal(missing.status, 404);
    await page.close();
  });

  it('the former dashboard stays at /dashboard, its data at /dashboard.json', async () => {
    const html = await fetch(env.url('/dashboard'));
    assert.equal(html.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(await html.text(), /fetch\('dashboard\.json'/);
    const data = await (await fetch(env.url('/dashboard.json'))).json() as { builds: Array<{ id: string }> };
    assert.deepEqual(data.builds.map((b) => b.id), [seeded.ready, seeded.building, seeded.failed]);
  });

  it('the overview charts keep what the sampler saw (a node that came and went)', async () => {
    const page = await open('/');
    await page.waitForSelector('#chart-nodes polyline', WAIT);
    // The node the live-update test added in state building was sampled, then deleted.
    assert.match(await page.locator('#chart-nodes').innerText(), /building 0/);
    await waitForText(page, '#audit', /alice/);
    await screenshot(page, 'overview');
    await page.close();
  });
});
