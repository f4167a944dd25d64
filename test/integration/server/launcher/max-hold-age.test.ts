/**
 * max-hold-age as Nodepool 11 applies it, on a real SQLite store through the cleanup worker
 * (clock injected): a held node is marked deleting once now - state_time reaches
 * min(its own hold expiration, max-hold-age), to the millisecond; a held node whose lock a
 * consumer holds is left alone.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import type { Provider } from '../../../../lib/drivers/contract/driver.js';
import { staticDriver } from '../../../../lib/drivers/static/index.js';
import { silentLogger } from '../../../../lib/log.js';
import { nodeLock } from '../../../../lib/store/lock-names.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import { CleanupWorker } from '../../../../server/launcher/cleanup-worker.js';

void describe('cleanup worker: max-hold-age', () => {
  let dir: string;
  let store: SqliteStore;
  let provider: Provider;
  let config: Config;
  let now = 0;
  let worker: CleanupWorker;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'max-hold-age-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    const session = await store.openSession({ owner: 'max-hold-age-test', hostname: 'localhost', pid: process.pid, ttlMs: 600_000 });
    config = parseConfig(['max-hold-age: 60', 'labels: [{name: small}]', 'providers:', '  - {name: lab, driver: static, pools: [{name: main}]}'].join('\n'), path.join(dir, 'nodepool.yaml'));
    const pc = config.providers[0];
    assert.equal(pc?.driver, 'static');
    provider = staticDriver.createProvider(pc, {
      store, log: silentLogger(), clock: () => now, config, sessionId: () => session.id,
    });
    worker = new CleanupWorker({
      store, log: silentLogger(), config: () => config, providers: () => new Map([['lab', provider]]), sessionId: () => session.id, clock: () => now,
    });
  });
  after(async () => {
    await provider?.stop();
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const hold = (over: Partial<NodeRecord> = {}) => store.createNode({ state: 'hold', provider: 'lab', pool: 'main', labels: ['small'], holdReason: 'debug', ...over });
  const stateOf = async (n: NodeRecord) => (await store.getNode(n.id))?.state;

  it('deletes each held node once now - state_time reaches min(hold expiration, max-hold-age), and none a consumer has locked', async () => {
    const own = await hold();
    await store.updateNode(own.id, { holdExpiration: own.stateTime + 10_000 });
    const plain = await hold();
    const long = await hold();
    await store.updateNode(long.id, { holdExpiration: long.stateTime + 3_600_000 });
    const locked = await hold();
    const zuul = await store.openSession({ owner: 'zuul', hostname: 'localhost', pid: process.pid, ttlMs: 600_000 });
    assert.equal(await store.tryLock(nodeLock(locked.id), zuul.id), true);

    now = own.stateTime + 9_999;
    await worker.pass();
    assert.equal(await stateOf(own), 'hold', 'not before its own expiration');
    now = own.stateTime + 10_000;
    await worker.pass();
    assert.deepEqual([await stateOf(own), await stateOf(plain)], ['deleting', 'hold'], 'its own expiration, reached exactly');

    now = plain.stateTime + 59_999;
    await worker.pass();
    assert.equal(await stateOf(plain), 'hold');
    now = plain.stateTime + 60_000;
    await worker.pass();
    assert.equal(await stateOf(plain), 'deleting', 'max-hold-age, reached exactly');

    now = long.stateTime + 60_000;
    await worker.pass();
    assert.equal(await stateOf(long), 'deleting', 'max-hold-age caps a longer hold expiration');

    now = locked.stateTime + 10_000_000;
    await worker.pass();
    assert.equal(await stateOf(locked), 'hold', 'a node whose lock a consumer holds is left alone');
    assert.equal((await store.getNode(own.id))?.reason, 'hold expired');
  });
});
