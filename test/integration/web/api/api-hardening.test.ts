/**
 * The write API against pages of other sites and against storms (issue 31 §3, §10), on a real
 * SQLite store through a real WebServer: a write from another origin is refused whatever its
 * token, a write without a JSON content type is refused, refusals that name nobody are answered
 * 429 past a burst while a valid token still acts, a request with too large headers is counted,
 * a verified user's refusals (too weak a role, no known role) are counted under the user and
 * never entries of the trail, a page the browser calls same-origin acts behind a proxy that
 * rewrites Host, revoking with `nodes: delete-ready` needs admin as deleting a node does, `hold`
 * caps `expires` as the CLI does, and every answer carries the security headers.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { MAX_TIMER_SECONDS } from '../../../../lib/config/schema-kit.js';
import { REFUSAL_BURST } from '../../../../server/web/api/refusal-ledger.js';
import { LOCAL, seed, startApiEnv, stateOf, type ApiEnv, type Seeded } from './api-env.js';
import { refusalsBySourceAndUser } from '../../../support/refusal-minutes.js';

/** Sends `raw` on its own connection and answers the status line. */
function rawStatus(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port });
    let out = '';
    s.setTimeout(15_000, () => s.destroy(new Error('no answer in 15 s')));
    s.on('connect', () => s.write(raw));
    s.on('data', (d: Buffer) => { out += d.toString('latin1'); });
    s.on('error', reject);
    s.on('close', () => resolve(out.split('\r\n')[0] ?? ''));
  });
}

describe('write API hardening', () => {
  let env: ApiEnv;
  let s: Seeded;

  beforeEach(async () => {
    env = await startApiEnv();
    s = await seed(env.store);
  });
  afterEach(async () => {
    await env?.close();
  });

  it('refuses a write from another origin whatever its token, and one without a JSON content type, before counting it as an entry', async () => {
    const admin = await env.token('admin');
    const before = await stateOf(env.store);
    const here = `http://127.0.0.1:${env.web.port}`;
    const refused: Array<[Record<string, string>, string | undefined, number, RegExp]> = [
      [{ Origin: 'http://evil.example' }, 'application/json', 403, /another origin/],
      [{ Origin: 'http://evil.example', 'Sec-Fetch-Site': 'cross-site' }, 'text/plain;charset=UTF-8', 403, /another site/],
      [{ 'Sec-Fetch-Site': 'same-site' }, 'application/json', 403, /another site/],
      [{ Origin: 'null' }, 'application/json', 403, /opaque/],
      [{ Origin: here }, 'text/plain', 415, /application\/json/],
      [{}, 'application/x-www-form-urlencoded', 415, /application\/json/],
      [{}, '', 415, /no Content-Type/],
    ];
    for (const [headers, contentType, status, message] of refused) {
      const res = await env.call('DELETE', `/api/node/${s.node.id}`, { token: admin, headers, ...(contentType !== undefined ? { contentType } : {}) });
      assert.equal(res.status, status, `${JSON.stringify(headers)} ${contentType}: ${JSON.stringify(res.json)}`);
      assert.match(String(res.json.message), message);
    }
    assert.equal(await stateOf(env.store), before);
    assert.deepEqual(await env.store.listAudit(), []);
    const [counted] = await refusalsBySourceAndUser(env.ledger, 5);
    assert.deepEqual([counted?.count, counted?.reasons], [refused.length, { 'cross-origin': 4, 'content-type': 3 }]);
    // This server's own page (same origin) and a client that is no browser act.
    const same = await env.call('POST', '/api/image/deb/build', { token: admin, headers: { Origin: here, 'Sec-Fetch-Site': 'same-origin' } });
    assert.equal(same.status, 200, JSON.stringify(same.json));
    const proxied = await env.call('POST', '/api/image/deb/pause', { token: admin, headers: { Origin: 'https://nodepool.example.org', 'X-Forwarded-Host': 'nodepool.example.org' } });
    assert.equal(proxied.status, 200, JSON.stringify(proxied.json));
  });

  it('answers 429 past a burst of refusals from one address, while a valid token from it still acts', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < REFUSAL_BURST + 10; i += 1) statuses.push((await env.call('POST', '/api/image/deb/build', { token: 'not-a-token' })).status);
    assert.deepEqual(statuses.slice(0, REFUSAL_BURST - 2), Array<number>(REFUSAL_BURST - 2).fill(401));
    assert.deepEqual(statuses.slice(-5), Array<number>(5).fill(429));
    const limited = await env.call('POST', '/api/image/deb/build');
    assert.equal(limited.status, 429);
    assert.match(String(limited.headers['retry-after']), /^\d+$/);
    const ok = await env.call('POST', '/api/image/deb/build', { token: await env.token('operator') });
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    // A user's own refusals (too weak a role) are counted under the user, never entries: 403 up to the same burst, then 429.
    const reader = await env.token('read', 'rita');
    const weak: number[] = [];
    for (let i = 0; i < REFUSAL_BURST + 5; i += 1) weak.push((await env.call('POST', '/api/image/deb/build', { token: reader })).status);
    assert.deepEqual(weak.slice(0, REFUSAL_BURST), Array<number>(REFUSAL_BURST).fill(403), weak.join(','));
    // Past the burst: 429, but for the refusals earned back meanwhile (one a second).
    assert.ok(weak.includes(429), weak.join(','));
    const trail = await env.store.listAudit({ limit: 1000 });
    assert.deepEqual(trail.map((e) => [e.user, e.result]), [['operator-user', 'ok']], 'only the action carried out is an entry');
    const aggregates = await refusalsBySourceAndUser(env.ledger, 10);
    const rita = aggregates.find((a) => a.user === 'rita');
    assert.deepEqual([rita?.source, rita?.count, rita?.limited, rita?.reasons], ['127.0.0.1', weak.length, weak.filter((x) => x === 429).length, { role: weak.length }]);
    assert.equal(aggregates.filter((a) => a.user === null).reduce((n, a) => n + a.count, 0), REFUSAL_BURST + 11);
  });

  it('counts a request whose headers are too large (431) with the refusals', async () => {
    const status = await rawStatus(env.web.port, `POST /api/image/deb/build HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(status, /^HTTP\/1\.1 431 /);
    const [counted] = await refusalsBySourceAndUser(env.ledger, 5);
    assert.deepEqual([counted?.count, counted?.statuses, counted?.reasons], [1, { 431: 1 }, { 'header-too-large': 1 }]);
  });

  it('counts a verified token with no known role under its subject, never as an entry of the trail', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ sub: 'mallory', nodepool: { role: 'superuser' } }).setProtectedHeader({ alg: 'HS256' })
      .setIssuer(LOCAL.issuer).setAudience(LOCAL.audience).setIssuedAt(now).setExpirationTime(now + 600)
      .sign(new TextEncoder().encode(LOCAL.secret));
    // Any account at the identity provider has such a token: a storm of it must not touch the trail.
    const statuses: number[] = [];
    for (let i = 0; i < REFUSAL_BURST + 10; i += 1) statuses.push((await env.call('POST', '/api/image/deb/build', { token })).status);
    assert.deepEqual(statuses.slice(0, REFUSAL_BURST), Array<number>(REFUSAL_BURST).fill(403), statuses.join(','));
    assert.ok(statuses.includes(429), statuses.join(','));
    assert.deepEqual(await env.store.listAudit(), []);
    const [counted, ...more] = await refusalsBySourceAndUser(env.ledger, 10);
    assert.deepEqual(more, []);
    assert.deepEqual([counted?.user, counted?.source, counted?.count, counted?.limited, counted?.reasons],
      ['mallory', '127.0.0.1', statuses.length, statuses.filter((x) => x === 429).length, { 'no-role': statuses.length }]);
    await env.ledger.flush(true);
    assert.equal((await refusalsBySourceAndUser(env.ledger, 10)).find((a) => a.user === 'mallory')?.count, statuses.length, 'written with the other aggregates');
  });

  it('takes a write the browser calls same-origin (or the user\'s own) whatever Host a proxy forwarded, and falls back to Origin without Sec-Fetch-Site', async () => {
    const op = await env.token('operator');
    // A proxy that rewrites Host to the upstream's (nginx's default) and adds no X-Forwarded-Host.
    const page = { Origin: 'https://nodepool.example.org' };
    const same = await env.call('POST', '/api/image/deb/pause', { token: op, body: { reason: 'proxied' }, headers: { ...page, 'Sec-Fetch-Site': 'same-origin' } });
    assert.equal(same.status, 200, JSON.stringify(same.json));
    const typed = await env.call('POST', '/api/image/deb/unpause', { token: op, headers: { ...page, 'Sec-Fetch-Site': 'none' } });
    assert.equal(typed.status, 200, JSON.stringify(typed.json));
    // Without Sec-Fetch-Site the Origin must name the host; another site's page is refused either way.
    for (const headers of [page, { ...page, 'Sec-Fetch-Site': 'same-site' }, { ...page, 'Sec-Fetch-Site': 'cross-site' }]) {
      const res = await env.call('POST', '/api/image/deb/build', { token: op, headers });
      assert.equal(res.status, 403, `${JSON.stringify(headers)}: ${JSON.stringify(res.json)}`);
    }
    assert.deepEqual((await env.store.listAudit()).map((e) => [e.action, e.result]).reverse(), [['image-pause', 'ok'], ['image-unpause', 'ok']]);
  });

  it('revoking with nodes: delete-ready deletes nodes, so it needs admin as deleting a node does', async () => {
    const before = await stateOf(env.store);
    const op = await env.call('POST', `/api/build/${s.newer.id}/revoke`, { token: await env.token('operator'), body: { nodes: 'delete-ready' } });
    assert.equal(op.status, 403, JSON.stringify(op.json));
    assert.match(String(op.json.message), /needs the admin role/);
    assert.equal(await stateOf(env.store), before);
    const admin = await env.call('POST', `/api/build/${s.newer.id}/revoke`, { token: await env.token('admin'), body: { nodes: 'delete-ready' } });
    assert.equal(admin.status, 200, JSON.stringify(admin.json));
    const keep = await env.call('POST', `/api/build/${s.older.id}/revoke`, { token: await env.token('operator'), body: { nodes: 'keep' } });
    assert.equal(keep.status, 200, JSON.stringify(keep.json));
  });

  it('hold caps expires as the CLI does', async () => {
    const op = await env.token('operator');
    const huge = await env.call('POST', `/api/node/${s.node.id}/hold`, { token: op, body: { expires: 1e308 } });
    assert.equal(huge.status, 400, JSON.stringify(huge.json));
    assert.deepEqual([huge.json.refusal, /at most 2147483 seconds/.test(String(huge.json.message))], ['invalid-argument', true]);
    assert.equal((await env.store.getNode(s.node.id))?.state, 'ready');
    const longest = await env.call('POST', `/api/node/${s.node.id}/hold`, { token: op, body: { expires: MAX_TIMER_SECONDS } });
    assert.equal(longest.status, 200, JSON.stringify(longest.json));
  });

  it('sends the security headers on every answer', async () => {
    for (const [method, p] of [['POST', '/api/image/deb/build'], ['GET', '/api/audit'], ['GET', '/api/image-list'], ['GET', '/nope'], ['GET', '/dashboard.json']]) {
      const res = await env.call(method as string, p as string);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', `${method} ${p}`);
      assert.equal(res.headers['x-frame-options'], 'DENY', `${method} ${p}`);
      assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/, `${method} ${p}`);
      assert.match(String(res.headers['content-security-policy']), /script-src 'self' 'sha256-/, `${method} ${p}`);
    }
  });
});
