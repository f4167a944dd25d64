/**
 * The session keeper on a ZooKeeper whose longest session timeout is shorter than the TTL a
 * daemon asks for (`session-ttl`, 30 s by default): the keeper renews at a third of the
 * timeout the server granted, so an expiry is seen within about a second here, not after
 * ten (a third of the requested 30 s).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SessionKeeper } from '../../../lib/client/session-keeper.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { runningProcesses } from '../../support/processes.js';
import { testLogger } from '../../support/test-log.js';
import { expireSession, FreezeProxy, startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

describe('session keeper on ZooKeeper', () => {
  let zk: ZooKeeperHandle;
  let proxy: FreezeProxy;
  let store: ZooKeeperStore;

  before(async () => {
    zk = await startZooKeeper({ maxSessionTimeoutMs: 3000 });
    proxy = await FreezeProxy.start(zk.port);
    store = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: proxy.port, chroot: '/keeper' }] });
  });

  after(async () => {
    await store?.close();
    await proxy?.close();
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('renews at a third of the granted timeout, so a real expiry is seen within about a second', async () => {
    const keeper = await SessionKeeper.open(store, { owner: 'nodepool-server', ttlMs: 30_000, log: testLogger(), onLapse: 'replace' });
    try {
      const first = keeper.id;
      assert.ok(keeper.session.ttlMs <= 3000, `granted ${keeper.session.ttlMs} ms`);
      const creds = store.sessionCredentials(first);
      assert.ok(creds);
      const t0 = Date.now();
      await expireSession({ serverPort: zk.port, proxy, ...creds });
      await waitFor(() => keeper.id !== first, { timeoutMs: 5000, what: 'the keeper to replace the expired session', intervalMs: 10 });
      assert.ok(Date.now() - t0 <= 1000 + 300, `replaced after ${Date.now() - t0} ms (granted timeout ${keeper.session.ttlMs} ms)`);
      assert.equal(await store.isSessionLive(keeper.id), true);
    } finally {
      await keeper.close();
    }
  });
});
