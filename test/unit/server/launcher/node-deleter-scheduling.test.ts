/**
 * The deleter's scheduling on a real SQLite store: at most `delete-concurrency` deletes in
 * flight, a finished delete starting the next waiting one at once (no further pass), no node
 * deleted twice at the same time, and a quick pass (the store woke it) taking returned nodes
 * but leaving abandonment checks to the full pass. The provider's delete is held open by the
 * test (a gate per node), which is what a slow cloud delete looks like to the deleter.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Provider } from '../../../../lib/drivers/contract/driver.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import { silentLogger } from '../../../../lib/log.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { nodeLock } from '../../../../lib/store/lock-names.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import { NodeDeleter } from '../../../../server/launcher/node-deleter.js';

/** A provider whose cleanupNode waits until the test opens that node's gate; it records what it saw. */
class GatedProvider {
  readonly name = 'slow';
  readonly started: string[] = [];
  readonly deleted: string[] = [];
  inFlight = 0;
  maxInFlight = 0;
  private readonly gates = new Map<string, () => void>();

  cleanupNode(node: NodeRecord): Promise<void> {
    this.started.push(node.id);
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise((resolve) => this.gates.set(node.id, () => {
      this.inFlight -= 1;
      resolve();
    }));
  }

  nodeDeleted(node: NodeRecord): Promise<void> {
    this.deleted.push(node.id);
    return Promise.resolve();
  }

  /** Lets the delete of `id` finish (it must have started). */
  open(id: string): void {
    const gate = this.gates.get(id);
    assert.ok(gate, `the delete of ${id} has started`);
    this.gates.delete(id);
    gate();
  }

  /** Node ids whose delete runs now. */
  get waiting(): string[] {
    return [...this.gates.keys()];
  }
}

void describe('node deleter scheduling', () => {
  let dir: string;
  let store: SqliteStore;
  let sessionId: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-deleter-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    sessionId = (await store.openSession({ owner: 'launcher', hostname: 'h', pid: 1, ttlMs: 60_000 })).id;
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const deleterFor = (p: GatedProvider, concurrency: number, fullPassEveryMs?: number): NodeDeleter => new NodeDeleter({
    store, log: silentLogger(), sessionId: () => sessionId, providers: () => new Map([[p.name, p as unknown as Provider]]),
    concurrency: () => concurrency, ...(fullPassEveryMs !== undefined ? { fullPassEveryMs: () => fullPassEveryMs } : {}),
  });

  it('keeps at most delete-concurrency deletes in flight and starts the next one as one finishes', async () => {
    const p = new GatedProvider();
    const deleter = deleterFor(p, 3);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await store.createNode({ state: 'used', provider: p.name, pool: 'main', labels: ['l'] })).id);
    await deleter.pass();
    await waitFor(() => p.waiting.length === 3, { timeoutMs: 5000, what: '3 deletes started' });
    // Passes while all places are taken start nothing more, and never a node already in flight.
    await deleter.pass();
    await deleter.pass();
    assert.equal(deleter.inFlightCount, 3);
    assert.equal(p.started.length, 3, 'no more than 3 started');
    // One finishing starts the next waiting one with no pass in between.
    const first = p.waiting[0] as string;
    p.open(first);
    await waitFor(() => p.started.length === 4 && p.waiting.length === 3, { timeoutMs: 5000, what: 'the 4th delete started' });
    assert.equal(await store.getNode(first), undefined, 'the finished node is gone');
    while (p.deleted.length < 8) {
      await waitFor(() => p.waiting.length > 0, { timeoutMs: 5000, what: 'a delete in flight' });
      const opened = p.waiting;
      for (const id of opened) p.open(id);
      await waitFor(() => opened.every((id) => p.deleted.includes(id)), { timeoutMs: 5000, what: 'the opened deletes finished' });
    }
    await deleter.settled();
    assert.equal(p.maxInFlight, 3, 'the bound was reached and never passed');
    assert.deepEqual([...p.started].sort(), [...ids].sort(), 'every node deleted exactly once');
    assert.deepEqual(await store.listNodes({ provider: p.name }), []);
  });

  it('a quick pass takes returned nodes only; the full pass every interval takes abandoned ones', async () => {
    const p = new GatedProvider();
    let now = 1_000_000;
    const deleter = new NodeDeleter({
      store, log: silentLogger(), sessionId: () => sessionId, providers: () => new Map([[p.name, p as unknown as Provider]]),
      concurrency: () => 10, fullPassEveryMs: () => 60_000, clock: () => now,
    });
    await deleter.pass(); // the first pass is a full one (nothing to do yet)
    // In use without a consumer session nor a hand-off, and unlocked: abandoned (a full-pass finding).
    const abandoned = await store.createNode({ state: 'in-use', provider: p.name, pool: 'main', labels: ['l'] });
    const used = await store.createNode({ state: 'used', provider: p.name, pool: 'main', labels: ['l'] });
    now += 1000;
    await deleter.pass();
    await waitFor(() => p.started.includes(used.id), { timeoutMs: 5000, what: 'the used node taken by a quick pass' });
    assert.ok(!p.started.includes(abandoned.id), 'the abandoned node waits for the full pass');
    now += 60_000;
    await deleter.pass();
    await waitFor(() => p.started.includes(abandoned.id), { timeoutMs: 5000, what: 'the abandoned node taken by the full pass' });
    p.open(used.id);
    p.open(abandoned.id);
    await deleter.settled();
    assert.deepEqual(p.deleted.sort(), [abandoned.id, used.id].sort());
  });

  it('does not try again a lock another holds until it is free (a refused try writes and would wake it again)', async () => {
    const p = new GatedProvider();
    let tries = 0;
    // The real store, counting tryLock calls.
    const counted = new Proxy(store, {
      get(target, key) {
        const v: unknown = Reflect.get(target, key);
        if (key === 'tryLock') return (...args: Parameters<SqliteStore['tryLock']>) => { tries += 1; return target.tryLock(...args); };
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const deleter = new NodeDeleter({
      store: counted, log: silentLogger(), sessionId: () => sessionId, providers: () => new Map([[p.name, p as unknown as Provider]]),
      concurrency: () => 10, fullPassEveryMs: () => 60_000, clock: () => 5_000_000,
    });
    const consumer = (await store.openSession({ owner: 'consumer', hostname: 'h', pid: 2, ttlMs: 60_000 })).id;
    const node = await store.createNode({ state: 'used', provider: p.name, pool: 'main', labels: ['l'] });
    assert.ok(await store.tryLock(nodeLock(node.id), consumer), 'the consumer still holds the used node');
    await deleter.pass(); // full: tries and is refused
    await deleter.settled();
    assert.equal(tries, 1);
    for (let i = 0; i < 5; i++) await deleter.pass(); // quick passes: the lock is read, not tried
    await deleter.settled();
    assert.equal(tries, 1, 'no further try while the consumer holds it');
    assert.deepEqual(p.started, []);
    await store.unlock(nodeLock(node.id), consumer);
    await deleter.pass(); // the unlock woke it: tried now
    await waitFor(() => p.waiting.includes(node.id), { timeoutMs: 5000, what: 'the delete started once the lock was free' });
    p.open(node.id);
    await deleter.settled();
    assert.equal(tries, 2);
    assert.equal(await store.getNode(node.id), undefined);
  });

  it('stop drops the deletes that wait for a place and waits for those in flight', async () => {
    const p = new GatedProvider();
    const deleter = deleterFor(p, 1);
    for (let i = 0; i < 3; i++) await store.createNode({ state: 'failed', provider: p.name, pool: 'main', labels: ['l'] });
    await deleter.pass();
    await waitFor(() => p.waiting.length === 1, { timeoutMs: 5000, what: 'one delete started' });
    const stopped = deleter.stop();
    p.open(p.waiting[0] as string);
    await stopped;
    assert.equal(p.started.length, 1, 'no delete started after stop');
    assert.equal((await store.listNodes({ provider: p.name })).length, 2, 'the other two are left for the next launcher');
    await deleter.pass();
    assert.equal(p.started.length, 1, 'a pass after stop starts nothing');
  });
});
