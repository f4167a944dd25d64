/**
 * A pool's placement state on a real SQLite store (server/launcher/pool-placement.ts): the
 * breaker is kept in the store, so the pool's next runner (a restart, or the fleet member
 * that takes the pool over) goes on from it instead of a closed one; labels with nothing to
 * boot and tenants deferred at their limits are published in the standing and name the
 * request's wait reason; a corrupt kept breaker is reported and the pool starts closed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { BreakerSettings } from '../../../lib/fleet/breaker.js';
import { waitReasons } from '../../../lib/fleet/standing.js';
import { createRootLogger } from '../../../lib/log.js';
import type { NodeRequestRecord } from '../../../lib/store/models.js';
import { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';
import type { LaunchOutcome } from '../../../server/launcher/request-handler-types.js';
import { breakerStatusKey, PoolPlacement, type PoolPlacementDeps } from '../../../server/launcher/pool-placement.js';

const SETTINGS: BreakerSettings = { failures: 2, backoffMs: 60_000, maxBackoffMs: 600_000, probeTimeoutMs: 300_000 };
const POOL = { name: 'main', labels: ['small', 'big'], maxServers: 10, nodeAttributes: {} };

void describe('pool placement state on a SQLite store', () => {
  let dir: string;
  let store: SqliteStore;
  let sessionId: string;
  let now = 1_800_000_000_000;
  /** The log lines (JSON) of the latest runner. */
  let logs: Array<{ level: string; message: string }>;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'pool-placement-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    sessionId = (await store.openSession({ owner: 'pool-placement-test', hostname: 'localhost', pid: process.pid, ttlMs: 600_000 })).id;
  });
  after(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A registered launcher of pool cloud/main and its placement, as a pool worker makes them. */
  async function runner(id: string, over: Partial<PoolPlacementDeps> = {}): Promise<PoolPlacement> {
    await store.registerLauncher({ id, sessionId, provider: 'cloud', pool: POOL.name, supportedLabels: POOL.labels, priority: 100, paused: false });
    const lines: Array<{ level: string; message: string }> = [];
    logs = lines;
    const log = createRootLogger({ level: 'debug', format: 'json', stream: new Writable({ write(chunk: Buffer, _e, cb) { lines.push(JSON.parse(chunk.toString()) as { level: string; message: string }); cb(); } }) });
    return new PoolPlacement({
      store, log, launcherId: id, provider: 'cloud', pool: POOL, priority: 100, breaker: () => SETTINGS, clock: () => now,
      isPaused: () => false, launches: () => true, readyCandidates: () => Promise.resolve([]), labelReady: () => Promise.resolve(true),
      nudge: () => undefined, ...over,
    });
  }

  const outcome = (result: LaunchOutcome['result'], nodeId: string): LaunchOutcome => ({
    provider: 'cloud', pool: POOL.name, label: 'small', nodeId, requestor: 'zuul', az: null, result, durationMs: 1000,
  });
  const standing = async (id: string) => (await store.listLaunchers()).find((l) => l.id === id)?.standing;
  const request = (over: Partial<NodeRequestRecord> = {}): NodeRequestRecord => ({
    id: '100-0000000001', priority: 100, state: 'requested', stateTime: now, created: now, labels: ['small'], requestor: 'zuul',
    reuse: true, provider: null, declinedBy: [], nodes: [], reason: null, requestorSession: null, ...over,
  });

  it('the next runner of a pool goes on from the breaker its last runner kept: still open, then the probe after the backoff', async () => {
    const first = await runner('nl-a-PoolWorker.cloud-main');
    await first.publish();
    for (let i = 0; i < 2; i++) first.launchEnded(outcome('failed', String(i)));
    await first.publish();
    assert.equal((await standing('nl-a-PoolWorker.cloud-main'))?.breaker.state, 'open');
    assert.equal((await store.getStatus<{ state: string }>(breakerStatusKey('cloud', 'main')))?.value.state, 'open', 'kept in the store');
    await store.unregisterLauncher('nl-a-PoolWorker.cloud-main');

    now += 10_000;
    const second = await runner('nl-b-PoolWorker.cloud-main');
    await second.publish();
    const taken = await standing('nl-b-PoolWorker.cloud-main');
    assert.deepEqual([taken?.breaker.state, taken?.breaker.failures], ['open', 2], 'not reset to closed by the move');
    assert.ok(logs.some((e) => e.message.includes('breaker taken over')), 'and says so');
    const launchers = await store.listLaunchers();
    assert.equal(await second.leavesToOthers(request(), launchers), true, 'it holds within the backoff');
    assert.deepEqual(waitReasons(request(), launchers, now, SETTINGS).map((r) => r.reason), ['breaker-open']);

    now += 60_000;
    assert.equal(await second.leavesToOthers(request(), await store.listLaunchers()), false, 'after the backoff, the probe');
    assert.equal((await standing('nl-b-PoolWorker.cloud-main'))?.breaker.state, 'probing');
    // Its request started no launch here (another launcher locked it first): the next request is the probe.
    await second.launchNotStarted('100-0000000001');
    assert.equal((await standing('nl-b-PoolWorker.cloud-main'))?.breaker.state, 'open');
    now += 1000;
    assert.equal(await second.leavesToOthers(request({ id: '100-0000000002' }), await store.listLaunchers()), false, 'the next request probes at once');
    second.launchEnded(outcome('ready', '9'));
    await second.publish();
    assert.equal((await store.getStatus<{ state: string }>(breakerStatusKey('cloud', 'main')))?.value.state, 'closed', 'the probe closed it, kept so');
    await store.unregisterLauncher('nl-b-PoolWorker.cloud-main');
  });

  it('a corrupt kept breaker is reported and the pool starts closed', async () => {
    await store.putStatus(breakerStatusKey('cloud', 'main'), { state: 'open', failures: 'many' });
    const p = await runner('nl-c-PoolWorker.cloud-main');
    await p.publish();
    assert.equal((await standing('nl-c-PoolWorker.cloud-main'))?.breaker.state, 'closed');
    assert.ok(logs.some((e) => e.level === 'warn' && e.message.includes('not a breaker state')));
    await store.unregisterLauncher('nl-c-PoolWorker.cloud-main');
  });

  it('publishes the labels with nothing to boot and the tenants it defers; a request of such a label or tenant says why it waits', async () => {
    let bigReady = false;
    const p = await runner('nl-d-PoolWorker.cloud-main', { labelReady: (l) => Promise.resolve(l !== 'big' || bigReady) });
    await p.publish();
    assert.deepEqual((await standing('nl-d-PoolWorker.cloud-main'))?.noReadyImage, ['big']);
    let launchers = await store.listLaunchers();
    assert.deepEqual(waitReasons(request({ labels: ['big'] }), launchers, now, SETTINGS).map((r) => [r.reason, r.detail]), [['no-ready-image', 'no ready image for big']]);
    assert.deepEqual(waitReasons(request(), launchers, now, SETTINGS), [], 'a label with an image is served now');

    p.tenantChecked('acme', { resource: 'cores', limit: 8, used: 8, needed: 2 });
    bigReady = true;
    await p.publish();
    let st = await standing('nl-d-PoolWorker.cloud-main');
    assert.deepEqual(st?.noReadyImage, ['big'], 'images are looked at again only every 5 s');
    assert.deepEqual(st?.tenantLimited, [{ tenant: 'acme', detail: 'cores: 8 of 8 used, the request needs 2' }]);
    launchers = await store.listLaunchers();
    assert.deepEqual(waitReasons(request({ tenantName: 'acme' }), launchers, now, SETTINGS).map((r) => r.reason), ['tenant-limit']);
    assert.deepEqual(waitReasons(request({ tenantName: 'other' }), launchers, now, SETTINGS), []);

    now += 5000;
    p.tenantChecked('acme', null);
    await p.publish();
    st = await standing('nl-d-PoolWorker.cloud-main');
    assert.deepEqual([st?.noReadyImage, st?.tenantLimited], [undefined, undefined], 'the image is ready and the tenant fits again');

    p.tenantChecked('acme', { resource: 'instances', limit: 2, used: 2, needed: 1 });
    await p.publish();
    assert.equal((await standing('nl-d-PoolWorker.cloud-main'))?.tenantLimited?.length, 1);
    now += 61_000;
    await p.publish();
    assert.equal((await standing('nl-d-PoolWorker.cloud-main'))?.tenantLimited, undefined, 'a deferral not seen again for a minute leaves the standing');
  });
});
