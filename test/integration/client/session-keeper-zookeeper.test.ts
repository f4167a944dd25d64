/**
 * The session keeper on a ZooKeeper whose longest session timeout is shorter than the TTL a
 * daemon asks for (`session-ttl`, 30 s by default): the keeper renews at a third of the
 * timeout the server granted, so an expiry is seen at the next renewal, within the granted
 * timeout, not after ten seconds (a third of the requested 30 s).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SessionKeeper } from '../../../lib/client/session-keeper.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { runningProcesses } from '../../support/processes.js';
import { countRenewals } from '../../support/renewal-count.js';
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

  it('renews at a third of the granted timeout, so a real expiry is seen at the next renewal, well before the granted timeout', async () => {
    const { store: counted, renewals } = countRenewals(store);
    const keeper = await SessionKeeper.open(counted, { owner: 'nodepool-server', ttlMs: 30_000, log: testLogger(), onLapse: 'replace' });
    try {
      const first = keeper.id;
      const granted = keeper.session.ttlMs;
      assert.ok(granted <= 3000, `granted ${granted} ms`);
      const creds = store.sessionCredentials(first);
      assert.ok(creds);
      // Renewing at a third of the requested 30 s would first renew after 10 s; at a third of the
      // granted timeout, within it.
      await waitFor(() => renewals() >= 1, { timeoutMs: granted, what: `a renewal within the granted ${granted} ms` });
      const before = renewals();
      await expireSession({ serverPort: zk.port, proxy, ...creds });
      await waitFor(() => keeper.id !== first, { timeoutMs: granted, what: `the keeper to replace the expired session within the granted ${granted} ms`, intervalMs: 10 });
      assert.ok(renewals() - before <= 1, `replaced after ${renewals() - before} renewals, not at the first after the expiry`);
      assert.equal(await store.isSessionLive(keeper.id), true);
    } finally {
      await keeper.close();
    }
  });
});
