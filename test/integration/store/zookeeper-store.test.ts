/**
 * The store contract against a real ZooKeeper (Debian's 3.8, started once for this file):
 * each test gets a fresh chroot, and the store talks through a freeze proxy so a session can
 * be expired for real (test/support/zookeeper.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { zkSpoiler } from '../../contract/spoil.js';
import { storeContract } from '../../contract/store.contract.js';
import { nodepool11Records } from '../../support/nodepool11-model.js';
import { runningProcesses } from '../../support/processes.js';
import { expireSession, FreezeProxy, startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

let zk: ZooKeeperHandle;
let proxy: FreezeProxy;

before(async () => {
  zk = await startZooKeeper();
  proxy = await FreezeProxy.start(zk.port);
});

after(async () => {
  await proxy.close();
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

storeContract('zookeeper', async (clock) => {
  const chroot = `/contract-${randomUUID()}`;
  const store = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: proxy.port, chroot }], clock });
  return {
    store,
    another: () => ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }], clock }),
    spoil: zkSpoiler(`127.0.0.1:${zk.port}`, store.layout),
    nodepool11Records: () => nodepool11Records(`127.0.0.1:${zk.port}`, chroot),
    cleanup: () => store.close(),
    async lapseSession(id: string) {
      const creds = store.sessionCredentials(id);
      if (!creds) throw new Error(`session ${id} was not opened through this store`);
      await expireSession({ serverPort: zk.port, proxy, ...creds });
      await waitFor(async () => !await store.isSessionLive(id), { timeoutMs: 10_000, what: `session ${id} to be seen expired`, intervalMs: 5 });
    },
  };
});
