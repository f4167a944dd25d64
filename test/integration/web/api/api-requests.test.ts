/**
 * The write API beyond roles (real SQLite, real HTTP): refusals answered with their HTTP status
 * and recorded as refused, bodies checked field by field, a server without `webapp.auth`
 * refusing every write, the audit trail read and paged with a token, an audit write that fails
 * not holding back the answer, and a retry request making the planner skip the upload backoff.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { waitFor } from '../../../../lib/lifecycle.js';
import { createRootLogger } from '../../../../lib/log.js';
import { storePath } from '../../../../lib/store/open-store.js';
import type { Store } from '../../../../lib/store/store.js';
import type { Config } from '../../../../lib/config/schema.js';
import type { PlannerSnapshot } from '../../../../server/image-lifecycle/actions.js';
import { plan } from '../../../../server/image-lifecycle/planner.js';
import { seed, startApiEnv, stateOf, type ApiEnv, type Seeded } from './api-env.js';
import { Writable } from 'node:stream';
import { refusalsBySourceAndUser } from '../../../support/refusal-minutes.js';

/** A JSON logger at debug whose lines are kept. */
function capturingLog(): { log: ReturnType<typeof createRootLogger>; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  return { log: createRootLogger({ level: 'debug', format: 'json', stream }), lines };
}

describe('write API requests', () => {
  let env: ApiEnv;
  let s: Seeded;

  beforeEach(async () => {
    env = await startApiEnv();
    s = await seed(env.store);
  });
  afterEach(async () => {
    await env?.close();
  });

  it('answers a refusal with its HTTP status and records it as refused', async () => {
    const op = await env.token('operator');
    const admin = await env.token('admin');
    const building = await env.store.createNode({ state: 'building', provider: 'hosts', pool: 'main', labels: ['small'] });
    const before = await stateOf(env.store);
    const cases: Array<[string, string, Record<string, unknown> | undefined, string, number, string]> = [
      [op, 'POST /api/image/nope/build', undefined, 'unknown-diskimage', 404, 'nope'],
      [op, `POST /api/upload/${s.readyUpload.id}/retry`, undefined, 'wrong-state', 409, s.readyUpload.id],
      [op, 'POST /api/upload/9999999999/retry', undefined, 'unknown-upload', 404, '9999999999'],
      [op, `POST /api/node/${s.node.id}/hold`, { expires: -5 }, 'invalid-argument', 400, s.node.id],
      [op, `POST /api/node/${building.id}/release`, undefined, 'wrong-state', 409, building.id],
      [op, 'POST /api/image/deb/pin', { build: s.older.id, provider: 'cloud-b' }, 'wrong-state', 409, `deb@cloud-b:${s.older.id}`],
      [op, `POST /api/build/${s.older.id}/revoke`, { nodes: 'all' }, 'invalid-argument', 400, s.older.id],
      [admin, 'DELETE /api/upload/0000000077', undefined, 'unknown-upload', 404, '0000000077'],
      [admin, 'DELETE /api/node/0000009999', undefined, 'unknown-node', 404, '0000009999'],
    ];
    for (const [token, what, body, refusal, status] of cases) {
      const [method, p] = what.split(' ') as [string, string];
      const res = await env.call(method, p, { token, body });
      assert.equal(res.status, status, `${what}: ${JSON.stringify(res.json)}`);
      assert.deepEqual([res.json.ok, res.json.refusal], [false, refusal], what);
      assert.ok(typeof res.json.message === 'string' && res.json.message.length > 0);
    }
    assert.equal(await stateOf(env.store), before, 'refused actions change nothing');
    const trail = (await env.store.listAudit()).reverse();
    // Each action ran: one entry, its attempt completed with its refusal.
    assert.deepEqual(trail.map((e) => [e.method, e.path, e.status, e.result, e.target]), cases.map(([, what, , , status, target]) => [
      ...what.split(' '), status, 'refused', target,
    ]));
  });

  it('refuses a body that is not a JSON object of the fields the endpoint takes, naming the field', async () => {
    const token = await env.token('operator');
    const p = '/api/image/deb/pause';
    const before = await stateOf(env.store);
    const bad: Array<[{ body?: unknown; rawBody?: string; contentType?: string }, number, RegExp]> = [
      [{ rawBody: '{"provider": "cloud-a"' }, 400, /not valid JSON/],
      [{ body: ['cloud-a'] }, 400, /JSON object, got an array/],
      [{ body: { provider: 7 } }, 400, /field provider: expected a string, got a number/],
      [{ body: { reason: '' } }, 400, /field reason: must not be empty/],
      [{ body: { provider: 'cloud-a', colour: 'red' } }, 400, /unknown field "colour"/],
      [{ body: { provider: 'cloud-a' }, contentType: 'text/plain' }, 415, /application\/json/],
      [{ rawBody: '{}', contentType: '' }, 415, /no Content-Type/],
    ];
    for (const [o, status, message] of bad) {
      const res = await env.call('POST', p, { token, ...o });
      assert.equal(res.status, status, JSON.stringify(res.json));
      assert.match(String(res.json.message), message);
    }
    const pin = await env.call('POST', '/api/image/deb/pin', { token, body: { provider: 'cloud-a' } });
    assert.equal(pin.status, 400);
    assert.match(String(pin.json.message), /field build is required/);
    const hold = await env.call('POST', `/api/node/${s.node.id}/hold`, { token, body: { expires: '1h' } });
    assert.match(String(hold.json.message), /field expires: expected a number/);
    const big = await env.call('POST', p, { token, body: { reason: 'x'.repeat(70 * 1024) } });
    assert.equal(big.status, 413);
    assert.equal(await stateOf(env.store), before);
    // Refused before any action runs: none is an entry. The two without a JSON content type are
    // refused before the token is read (counted for the address), the rest for the operator.
    assert.deepEqual(await env.store.listAudit(), []);
    assert.deepEqual((await refusalsBySourceAndUser(env.ledger, 5)).map((a) => [a.user, a.count, a.statuses, a.reasons]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      [[null, 2, { 415: 2 }, { 'content-type': 2 }], ['operator-user', bad.length - 2 + 3, { 400: bad.length - 2 + 2, 413: 1 }, { body: bad.length - 2 + 3 }]]);
    // A JSON content type with parameters is JSON.
    const ok = await env.call('POST', p, { token, body: { provider: 'cloud-a' }, contentType: 'application/json; charset=utf-8' });
    assert.equal(ok.status, 200);
  });

  it('reads the audit trail with a read token, newest first, paged with limit and before', async () => {
    const op = await env.token('operator', 'alice');
    for (let i = 0; i < 5; i += 1) await env.call('POST', '/api/image/deb/pause', { token: op, body: { reason: `r${i}` } });
    assert.equal((await env.call('GET', '/api/audit')).status, 401);
    assert.equal((await env.call('GET', '/api/audit', { token: await env.forgedToken('admin') })).status, 401);
    const read = await env.token('read');
    const all = await env.call('GET', '/api/audit', { token: read });
    assert.equal(all.status, 200);
    const entries = all.json.entries as Array<{ id: string; user: string; message: string; result: string }>;
    assert.equal(entries.length, 5, 'one entry an action');
    assert.ok(entries.every((e) => e.user === 'alice'));
    assert.deepEqual(entries.map((e) => e.result), ['ok', 'ok', 'ok', 'ok', 'ok']);
    assert.match(entries[0]?.message ?? '', /\(r4\)/);
    const page = await env.call('GET', '/api/audit?limit=2', { token: read });
    const first = page.json.entries as Array<{ id: string }>;
    assert.deepEqual(first.map((e) => e.id), entries.slice(0, 2).map((e) => e.id));
    assert.equal(page.json.next, first[1]?.id);
    const next = await env.call('GET', `/api/audit?limit=2&before=${String(page.json.next)}`, { token: read });
    assert.deepEqual((next.json.entries as Array<{ id: string }>).map((e) => e.id), entries.slice(2, 4).map((e) => e.id));
    for (const q of ['limit=0', 'limit=abc', 'limit=1001', 'before=x1']) {
      const res = await env.call('GET', `/api/audit?${q}`, { token: read });
      assert.equal(res.status, 400, q);
    }
    assert.equal((await env.call('GET', '/api/audit', { token: read })).status, 200, 'reading the trail is not itself audited');
    assert.equal((await env.store.listAudit()).length, 5);
    // The refused reads above are not writes: nothing counted.
    assert.deepEqual(all.json.refusals, []);
  });

  it('answers methods a path does not take with 405, and counts a write no route takes with the refusals', async () => {
    const res = await env.call('GET', '/api/image/deb/build', { token: await env.token('admin') });
    assert.equal(res.status, 405);
    assert.equal((await env.call('PUT', '/api/image/deb/build', { token: await env.token('admin') })).status, 405);
    assert.equal((await env.call('POST', '/api/nothing-here')).status, 404);
    assert.deepEqual(await env.store.listAudit(), []);
    const [counted] = await refusalsBySourceAndUser(env.ledger, 5);
    assert.deepEqual([counted?.count, counted?.statuses, counted?.reasons, counted?.requests],
      [2, { 405: 1, 404: 1 }, { unrouted: 2 }, { 'PUT /api/image/deb/build': 1, 'POST /api/nothing-here': 1 }]);
  });

  it('runs no action whose attempt cannot be written to the audit trail: 503, logged', async () => {
    await env.close();
    const { log, lines } = capturingLog();
    env = await startApiEnv({ log });
    const db = new Database(storePath(env.config));
    try {
      db.exec("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit BEGIN SELECT RAISE(FAIL, 'audit disk full'); END");
    } finally {
      db.close();
    }
    const res = await env.call('POST', '/api/image/deb/build', { token: await env.token('operator') });
    assert.equal(res.status, 503, JSON.stringify(res.json));
    assert.deepEqual([res.json.error, /not run/.test(String(res.json.message))], ['audit-unavailable', true]);
    assert.deepEqual(await env.store.listBuildRequests(), []);
    const failed = lines.filter((l) => l.includes('its attempt could not be written'));
    assert.equal(failed.length, 1);
    assert.match(failed[0] ?? '', /audit disk full/);
    assert.match(failed[0] ?? '', /"action":"image-build"/);
  });

  it('keeps the attempt and still answers when the outcome cannot be written, and logs that it could not', async () => {
    await env.close();
    const { log, lines } = capturingLog();
    env = await startApiEnv({ log });
    const db = new Database(storePath(env.config));
    try {
      // The outcome is written over the attempt: refuse that update (and a new entry in its stead).
      db.exec("CREATE TRIGGER refuse_outcome BEFORE UPDATE ON audit BEGIN SELECT RAISE(FAIL, 'audit disk full'); END");
      db.exec("CREATE TRIGGER refuse_second BEFORE INSERT ON audit WHEN NEW.result <> 'attempted' BEGIN SELECT RAISE(FAIL, 'audit disk full'); END");
    } finally {
      db.close();
    }
    const res = await env.call('POST', '/api/image/deb/build', { token: await env.token('operator') });
    assert.equal(res.status, 200);
    assert.deepEqual((await env.store.listBuildRequests()).map((r) => r.diskimage), ['deb']);
    assert.deepEqual((await env.store.listAudit()).map((e) => [e.action, e.status, e.result, e.user]), [['image-build', 0, 'attempted', 'operator-user']]);
    const failed = lines.filter((l) => l.includes('could not write the audit entry'));
    assert.equal(failed.length, 1);
    assert.match(failed[0] ?? '', /audit disk full/);
  });
});

describe('write API when the store fails', () => {
  it('answers 500 without the action done, records it as an error and logs it', async () => {
    const { log, lines } = capturingLog();
    const env = await startApiEnv({ log });
    try {
      const db = new Database(storePath(env.config));
      try {
        db.exec("CREATE TRIGGER refuse_retry BEFORE INSERT ON upload_retries BEGIN SELECT RAISE(FAIL, 'retries disk full'); END");
      } finally {
        db.close();
      }
      const s = await seed(env.store);
      const res = await env.call('POST', `/api/upload/${s.failedUpload.id}/retry`, { token: await env.token('operator') });
      assert.equal(res.status, 500);
      assert.deepEqual([res.json.ok, res.json.error], [false, 'internal']);
      assert.match(String(res.json.message), /retries disk full/);
      assert.deepEqual(await env.store.listUploadRetries(), []);
      assert.deepEqual((await env.store.listAudit()).map((e) => [e.action, e.status, e.result, e.user]), [['upload-retry', 500, 'error', 'operator-user']]);
      assert.equal(lines.filter((l) => l.includes('write request failed') && l.includes('"level":"error"')).length, 1);
    } finally {
      await env.close();
    }
  });
});

describe('write API without webapp.auth', () => {
  it('refuses every write with 403 and counts it, without an entry each', async () => {
    const env = await startApiEnv({ noAuth: true });
    try {
      const s = await seed(env.store);
      const before = await stateOf(env.store);
      const res = await env.call('POST', `/api/node/${s.node.id}/hold`, { token: 'anything' });
      assert.equal(res.status, 403);
      assert.match(String(res.json.message), /not configured/);
      assert.equal((await env.call('GET', '/api/audit')).status, 403);
      assert.equal(await stateOf(env.store), before);
      assert.deepEqual(await env.store.listAudit(), []);
      assert.deepEqual((await refusalsBySourceAndUser(env.ledger, 5)).map((a) => [a.source, a.count, a.statuses, a.reasons]), [['127.0.0.1', 1, { 403: 1 }, { 'not-configured': 1 }]]);
    } finally {
      await env.close();
    }
  });
});

describe('write API log lines', () => {
  it('logs each write with who and how it ended, never the token', async () => {
    const { log, lines } = capturingLog();
    const env = await startApiEnv({ log });
    try {
      const token = await env.token('operator', 'bob');
      await env.call('POST', '/api/image/deb/build', { token });
      await env.call('POST', '/api/image/deb/build', { token: `${token}x` });
      const writes = lines.filter((l) => l.includes('write request'));
      assert.equal(writes.length, 1);
      assert.match(writes[0] ?? '', /"user":"bob"/);
      // A token that does not verify names nobody: one debug line, counted with its source.
      const refused = lines.filter((l) => l.includes('write refused'));
      assert.equal(refused.length, 1);
      assert.match(refused[0] ?? '', /"reason":"bad-token"/);
      assert.match(refused[0] ?? '', /"level":"debug"/);
      assert.ok(lines.every((l) => !l.includes(token.split('.')[2] as string)), 'no log line holds the token');
    } finally {
      await env.close();
    }
  });
});

/** A planner snapshot of the store's records, with every ready build's upload function registered. */
async function snapshotOf(store: Store, config: Config): Promise<PlannerSnapshot> {
  const [builds, uploads, buildRequests, pauses, pins, revocations, uploadRetries] = await Promise.all([
    store.listBuilds(), store.listUploads(), store.listBuildRequests(), store.listPauses(), store.listPins(), store.listRevocations(), store.listUploadRetries(),
  ]);
  const registered = new Map<string, string[]>([['image-build:deb', ['builder-1:1']], ...builds.map((b): [string, string[]] => [`image-upload:${b.id}`, ['builder-1:1']])]);
  return {
    now: Date.now(), config, builds, uploads, buildRequests, pauses, pins, revocations, uploadRetries, registered,
    absentSince: new Map(), removedSince: new Map(), unknownSince: new Map(), unknownSuspect: new Set(),
    inFlight: { builds: new Set(), uploads: new Set(), buildDeletes: new Set(), uploadDeletes: new Set() },
  };
}

describe('POST /api/upload/:id/retry and the image lifecycle', () => {
  it('skips the retry backoff once for a request newer than the newest failure', async () => {
    const env = await startApiEnv();
    try {
      const s = await seed(env.store);
      const startsOnB = async (): Promise<Array<{ type: string; servesRetry?: unknown }>> =>
        plan(await snapshotOf(env.store, env.config)).actions.filter((a) => a.type === 'start-upload' && a.provider === 'cloud-b');
      const target = async (): Promise<{ retryAt: number | null }> =>
        plan(await snapshotOf(env.store, env.config)).targets.find((t) => t.provider === 'cloud-b') as { retryAt: number | null };
      assert.deepEqual(await startsOnB(), [], 'the failure just now holds the next upload back');
      assert.ok(((await target()).retryAt ?? 0) > Date.now());
      await waitFor(() => Date.now() > s.failedUpload.stateTime, { timeoutMs: 1000, what: 'a clock tick past the failure', intervalMs: 1 });
      const res = await env.call('POST', `/api/upload/${s.failedUpload.id}/retry`, { token: await env.token('operator') });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      const [request] = await env.store.listUploadRetries();
      assert.ok(request);
      assert.deepEqual(await startsOnB(), [{ type: 'start-upload', buildId: s.newer.id, provider: 'cloud-b', imageName: 'deb', servesRetry: { diskimage: 'deb', requested: request.requested } }]);
      assert.ok(((await target()).retryAt ?? Infinity) <= Date.now(), 'the status says the retry is due');

      // A failure after the request: the request is spent, the backoff holds again.
      await waitFor(() => Date.now() > request.requested, { timeoutMs: 1000, what: 'a clock tick past the request', intervalMs: 1 });
      const again = await env.store.createUpload({ buildId: s.newer.id, provider: 'cloud-b', imageName: 'deb', externalName: 'deb-again' });
      await env.store.updateUpload(again.id, { state: 'failed', reason: 'glance said no again' });
      const held = await startsOnB();
      assert.equal(held.length, 0, JSON.stringify(held));

      // Served: the request made up to its time is cleared (as the start-upload executor does).
      await env.store.clearUploadRetry('deb', 'cloud-b', request.requested);
      assert.deepEqual(await env.store.listUploadRetries(), []);
    } finally {
      await env.close();
    }
  });
});
