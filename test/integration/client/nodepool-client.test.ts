import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  NodeLockedError, NodeNotFoundError, NodeStateError, RequestFailedError, RequestTimeoutError, SessionLostError,
} from '../../../lib/errors.js';
import { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import type { NodeRecord, NodeRequestRecord } from '../../../lib/store/models.js';
import { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';
import type { Store } from '../../../lib/store/store.js';

describe('NodepoolClient against a SQLite store', () => {
  const releasers = new Releasers();
  afterEach(() => releasers.releaseAll());

  /** A store file per test, a "launcher" store connection for the test, and a client. */
  async function setup(ttlSeconds = 30, opts: { clock?: () => number; renewIntervalMs?: number } = {}): Promise<{ store: Store; launcher: Store; client: NodepoolClient }> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-client-'));
    releasers.add('temp dir', () => rm(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'nodepool.db');
    const store = await SqliteStore.open(file, opts.clock ? { clock: opts.clock } : {});
    releasers.add('client store', () => store.close());
    const launcher = await SqliteStore.open(file, opts.clock ? { clock: opts.clock } : {});
    releasers.add('launcher store', () => launcher.close());
    const client = await NodepoolClient.open({
      store, sessionTtlSeconds: ttlSeconds, requestor: 'ci-system', ...(opts.renewIntervalMs ? { renewIntervalMs: opts.renewIntervalMs } : {}),
    });
    releasers.add('client', () => client.close());
    return { store, launcher, client };
  }

  /** Plays the launcher: pending, one ready node per label allocated to the request, fulfilled. */
  async function fulfil(launcher: Store, r: NodeRequestRecord): Promise<NodeRecord[]> {
    await launcher.updateRequest(r.id, { state: 'pending' }, { expectStates: ['requested'] });
    const nodes: NodeRecord[] = [];
    for (const label of r.labels) {
      nodes.push(await launcher.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: [label], allocatedTo: r.id, externalId: `srv-${label}` }));
    }
    await launcher.updateRequest(r.id, { state: 'fulfilled', nodes: nodes.map((n) => n.id) }, { expectStates: ['pending'] });
    return nodes;
  }

  async function firstRequest(launcher: Store): Promise<NodeRequestRecord> {
    return waitFor(async () => (await launcher.listRequests({ requestor: 'ci-system' }))[0], { timeoutMs: 5000, what: 'the request' });
  }

  it('requests, waits and accepts: nodes in-use in request order, unlocked, request deleted', async () => {
    const { launcher, client } = await setup();
    const updates: string[] = [];
    const pending = client.requestNodes(['large', 'small'], { timeoutMs: 10_000, pollIntervalMs: 20, onUpdate: (r) => updates.push(r.state) });
    const r = await firstRequest(launcher);
    assert.equal(r.requestorSession, client.sessionId, 'ephemeral by default');
    assert.equal(r.priority, 100);
    const made = await fulfil(launcher, r);
    const nodes = await pending;
    assert.deepEqual(nodes.map((n) => n.id), made.map((n) => n.id));
    assert.deepEqual(nodes.map((n) => [n.labels[0], n.state, n.consumerSession]), [['large', 'in-use', null], ['small', 'in-use', null]]);
    assert.equal(updates[0], 'requested');
    assert.equal(updates.at(-1), 'fulfilled');
    assert.equal(await launcher.getRequest(r.id), undefined);
    for (const n of nodes) assert.equal((await launcher.getLock(`node:${n.id}`))?.live ?? false, false);
    // Closing the client does not touch accepted nodes (they stay until released).
    await client.close();
    assert.equal((await launcher.getNode(nodes[0]!.id))?.state, 'in-use');
  });

  it('keepLocked: nodes stay locked by the session and name it as consumer until released', async () => {
    const { launcher, client } = await setup();
    const pending = client.requestNodes(['small'], { timeoutMs: 10_000, pollIntervalMs: 20, keepLocked: true });
    await fulfil(launcher, await firstRequest(launcher));
    const [node] = await pending;
    assert.equal(node?.consumerSession, client.sessionId);
    const lock = await launcher.getLock(`node:${node!.id}`);
    assert.equal(lock?.sessionId, client.sessionId);
    assert.equal(lock?.live, true);
    const released = await client.release(node!.id);
    assert.equal(released.state, 'used');
    assert.equal(released.consumerSession, null);
    assert.equal((await launcher.getLock(`node:${node!.id}`))?.live ?? false, false, 'the release unlocks it for the deleter');
  });

  it("throws the launchers' reason for a failed request and deletes it", async () => {
    const { launcher, client } = await setup();
    const pending = client.requestNodes(['gpu'], { timeoutMs: 10_000, pollIntervalMs: 20 });
    const r = await firstRequest(launcher);
    await launcher.updateRequest(r.id, { state: 'failed', reason: 'node type(s) [gpu] not available', declinedBy: ['l1'] });
    await assert.rejects(pending, (err: unknown) => err instanceof RequestFailedError && err.reason === 'node type(s) [gpu] not available'
      && /gpu\] not available/.test(err.message));
    assert.equal(await launcher.getRequest(r.id), undefined);
  });

  it('deletes the request when the wait times out or is aborted', async () => {
    const { launcher, client } = await setup();
    await assert.rejects(client.requestNodes(['small'], { timeoutMs: 150, pollIntervalMs: 20 }),
      (err: unknown) => err instanceof RequestTimeoutError && err.state === 'requested');
    assert.deepEqual(await launcher.listRequests(), []);
    const ac = new AbortController();
    const pending = client.requestNodes(['small'], { timeoutMs: 10_000, pollIntervalMs: 20, signal: ac.signal });
    await firstRequest(launcher);
    ac.abort(new Error('stop'));
    await assert.rejects(pending, /stop/);
    assert.deepEqual(await launcher.listRequests(), []);
  });

  it('an ephemeral request vanishes with the session; a non-ephemeral one stays', async () => {
    const { launcher, client } = await setup();
    const eph = await client.request(['small']);
    const kept = await client.request(['large'], { ephemeral: false, priority: 50, provider: 'cloud-a', reuse: false });
    assert.equal(kept.requestorSession, null);
    assert.match(kept.id, /^050-\d{10}$/);
    await client.close();
    assert.equal(await launcher.getRequest(eph.id), undefined);
    assert.deepEqual(await launcher.getRequest(kept.id), kept);
    await assert.rejects(client.request(['small']), SessionLostError);
  });

  it('keeps its session alive past the TTL by renewing it', async () => {
    let skew = 0;
    const { launcher, client } = await setup(30, { clock: () => Date.now() + skew, renewIntervalMs: 20 });
    // Past the first TTL on the store clock, in steps shorter than the TTL, a renewal between each.
    for (const step of [20_000, 20_000, 20_000]) {
      skew += step;
      const after = Date.now() + skew;
      await waitFor(async () => ((await launcher.getSession(client.sessionId))?.renewed ?? 0) >= after, { timeoutMs: 5000, what: 'a renewal after the clock moved' });
    }
    assert.equal(await launcher.isSessionLive(client.sessionId), true, '60 s of store time with a 30 s TTL');
  });

  it('holds and releases nodes by state, and names unknown nodes', async () => {
    const { launcher, client } = await setup();
    const ready = await launcher.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
    const before = Date.now();
    const held = await client.hold(ready.id, { reason: 'debugging', expireSeconds: 3600 });
    assert.equal(held.state, 'hold');
    assert.equal(held.holdReason, 'debugging');
    assert.ok(held.holdExpiration !== null && held.holdExpiration >= before + 3_600_000 && held.holdExpiration <= Date.now() + 3_600_000);
    assert.equal((await client.release(ready.id)).state, 'used');
    await assert.rejects(client.release(ready.id), (err: unknown) => err instanceof NodeStateError && err.state === 'used');
    const building = await launcher.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['small'] });
    await assert.rejects(client.hold(building.id, { reason: 'x' }), /node \d+ is building; only ready, in-use, hold nodes can be held/);
    await assert.rejects(client.release('0000009999'), (err: unknown) => err instanceof NodeNotFoundError && err.nodeId === '0000009999');
  });

  it('accept puts nodes back to ready and unlocks when one of them is not ready any more', async () => {
    const { launcher, client } = await setup();
    const r = await client.request(['small', 'large']);
    const [a, b] = await fulfil(launcher, r);
    await launcher.updateNode(b!.id, { state: 'deleting' });
    const fulfilled = await launcher.getRequest(r.id);
    await assert.rejects(client.accept(fulfilled!));
    assert.equal((await launcher.getNode(a!.id))?.state, 'ready');
    assert.equal((await launcher.getLock(`node:${a!.id}`))?.live ?? false, false);
    assert.ok(await launcher.getRequest(r.id), 'the request stays for another try');
  });

  it('accept waits for the launcher to release a fulfilled node it still holds (Nodepool fulfils, then unlocks)', async () => {
    const { launcher, client } = await setup();
    const other = await launcher.openSession({ owner: 'launchers', hostname: 'h', pid: 1, ttlMs: 30_000 });
    const r = await client.request(['small']);
    const [node] = await fulfil(launcher, r);
    assert.ok(await launcher.tryLock(`node:${node!.id}`, other.id), 'the launcher still holds the node');
    const released = delay(300).then(() => launcher.unlock(`node:${node!.id}`, other.id));
    const [taken] = await client.accept((await launcher.getRequest(r.id))!);
    assert.ok(await released, 'the launcher released it meanwhile');
    assert.deepEqual([taken?.id, taken?.state], [node!.id, 'in-use']);
  });

  it('a nodeset served in parts is given back whole when accepting a later part fails', async () => {
    const { launcher, client } = await setup();
    const other = await launcher.openSession({ owner: 'launchers', hostname: 'h', pid: 1, ttlMs: 30_000 });
    await launcher.registerLauncher({ id: 'l-large', sessionId: other.id, provider: 'cloud-a', pool: 'big', supportedLabels: ['large'] });
    await launcher.registerLauncher({ id: 'l-small', sessionId: other.id, provider: 'cloud-b', pool: 'main', supportedLabels: ['small'] });
    const pending = client.requestNodes(['large', 'small'], { timeoutMs: 10_000, pollIntervalMs: 20 });
    const parts = await waitFor(async () => {
      const rs = await launcher.listRequests({ requestor: 'ci-system' });
      return rs.length === 2 ? rs : undefined;
    }, { timeoutMs: 5000, what: 'two requests, one per part' });
    const large = parts.find((r) => r.labels[0] === 'large')!;
    const small = parts.find((r) => r.labels[0] === 'small')!;
    const [bigNode] = await fulfil(launcher, large);
    const [smallNode] = await fulfil(launcher, small);
    assert.ok(await launcher.tryLock(`node:${smallNode!.id}`, other.id), 'someone else holds the second part\'s node');
    await assert.rejects(pending, (err: unknown) => err instanceof NodeLockedError);
    const back = await launcher.getNode(bigNode!.id);
    assert.deepEqual([back?.state, back?.consumerSession], ['ready', null], 'the accepted part is back to ready');
    assert.equal((await launcher.getLock(`node:${bigNode!.id}`))?.live ?? false, false);
    assert.equal(await launcher.getRequest(small.id), undefined, 'the part not accepted is given up');
    assert.equal((await launcher.getNode(smallNode!.id))?.state, 'ready', 'its node stays for the deleter to return to stock');
  });
});
