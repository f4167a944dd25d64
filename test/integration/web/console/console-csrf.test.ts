/**
 * The console and the write API in a real headless Chromium (playwright-core, Debian's chromium)
 * against a real WebServer serving both on a real SQLite store (issue 31 §3, §10): under the
 * Content-Security-Policy the console's script runs (no violation reported) and its buttons act,
 * each write sent as same-origin JSON; a page of another site sending `fetch(..., { mode:
 * 'no-cors', method: 'POST' })` to the write API is refused, and its requests are counted for
 * their source, never an audit entry each; another site cannot frame the console.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { waitFor } from '../../../../lib/lifecycle.js';
import { seed, startApiEnv, type ApiEnv } from '../api/api-env.js';

/** A page of another site: it posts to `target` as a no-cors fetch, `times` times, then says so in its title. */
function evilPage(target: string, times: number, console: string): string {
  return `<!doctype html><title>evil</title><iframe id="f" src="${console}"></iframe><script>
(async () => {
  for (let i = 0; i < ${times}; i += 1) {
    await fetch(${JSON.stringify(target)}, { mode: 'no-cors', method: 'POST', body: '{"reason":"x"}' }).catch(() => undefined);
  }
  document.title = 'sent';
})();
</script>`;
}

describe('the console and the write API in Chromium', () => {
  let env: ApiEnv;
  let browser: Browser;
  let evil: http.Server;
  let evilPort = 0;

  before(async () => {
    env = await startApiEnv({ console: true });
    await seed(env.store);
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    evil = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(evilPage(`http://127.0.0.1:${env.web.port}/api/image/deb/build`, 20, `http://127.0.0.1:${env.web.port}/images`));
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    evilPort = (evil.address() as AddressInfo).port;
  });
  after(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (evil ? evil.close(() => resolve()) : resolve()));
    await env?.close();
  });

  it('runs under its Content-Security-Policy, and a button sends a same-origin JSON write that acts', async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text()); });
    page.on('pageerror', (e) => violations.push(e.message));
    const sent: Array<Record<string, string>> = [];
    page.on('request', (r) => { if (r.url().includes('/api/')) sent.push(r.headers()); });
    const res = await page.goto(`http://127.0.0.1:${env.web.port}/images`);
    assert.match(String(res?.headers()['content-security-policy']), /script-src 'self'/);
    assert.equal(res?.headers()['x-frame-options'], 'DENY');
    await page.getByPlaceholder('paste a token to act').fill(await env.token('operator', 'olive'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Build now', exact: true }).first().click();
    await page.locator('#message').filter({ hasText: /Build now: .+/ }).waitFor({ timeout: 30_000 });
    assert.match(await page.locator('#message').innerText(), /^Build now: /);
    assert.equal(await page.locator('#message').getAttribute('class'), 'ok', await page.locator('#message').innerText());
    assert.deepEqual((await env.store.listBuildRequests()).map((r) => r.diskimage), ['deb']);
    assert.deepEqual((await env.store.listAudit()).map((e) => [e.user, e.action, e.result]), [['olive', 'image-build', 'ok']]);
    assert.equal(sent[0]?.['content-type'], 'application/json');
    // The former dashboard's inline script runs under the policy too (by its hash): it fills its tables.
    await page.goto(`http://127.0.0.1:${env.web.port}/dashboard`);
    await page.locator('#status').filter({ hasNotText: 'loading…' }).waitFor({ timeout: 30_000 });
    assert.deepEqual(violations, []);
    await page.close();
  });

  it('refuses a page of another site posting no-cors to the write API, counting its requests without an entry each; it cannot frame the console', async () => {
    const entries = (await env.store.listAudit({ limit: 1000 })).length;
    const state = JSON.stringify(await env.store.listBuildRequests());
    const crossOrigin = async (): Promise<number> => (await env.ledger.recent(10)).reduce((sum, a) => sum + (a.reasons['cross-origin'] ?? 0), 0);
    const before = await crossOrigin();
    const page = await browser.newPage();
    await page.goto(`http://localhost:${evilPort}/`);
    await page.waitForFunction('document.title === "sent"', undefined, { timeout: 30_000 });
    // counted per minute: the 20 may straddle a minute's end (CI, 2026-12-02), so they are summed
    await waitFor(async () => (await crossOrigin()) >= before + 20, { timeoutMs: 30_000, what: 'the 20 cross-site POSTs counted' });
    assert.equal(await crossOrigin(), before + 20);
    assert.equal((await env.store.listAudit({ limit: 1000 })).length, entries, 'no audit entry for them');
    assert.equal(JSON.stringify(await env.store.listBuildRequests()), state);
    // The console in the page's iframe is not shown (frame-ancestors 'none').
    const frame = page.frames().find((f) => f.url().includes('/images'));
    const framed = frame ? await frame.evaluate('document.querySelector("#blocks") !== null').catch(() => false) : false;
    assert.equal(framed, false);
    await page.close();
  });
});
