/**
 * A returned static node's slot is ready again at once, not at the deleter's next interval
 * (issue 22): with `delete-interval` 60 s, nodepool-server in this process and one real sshd
 * host with two slots, a node a consumer marks used is deleted and its slot registered again
 * within a few seconds (the store's change wakes the deleter), on SQLite and on ZooKeeper.
 * A request waiting for a slot is served by the returned one.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { LauncherSystem } from '../../../support/launcher-system.js';
import { stopAllProcesses } from '../../../support/processes.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../../support/zookeeper.js';

/** Well under the 60 s delete-interval: only a woken deleter meets it. */
const BACK_WITHIN_MS = 5000;

for (const kind of ['sqlite', 'zookeeper'] as const) {
  void describe(`launcher on ${kind}: a used static node's slot is back at once`, () => {
    let sshd: SshdHandle;
    let zk: ZooKeeperHandle | undefined;
    let sys: LauncherSystem;

    before(async () => {
      sshd = await startSshd();
      zk = kind === 'zookeeper' ? await startZooKeeper() : undefined;
      sys = await LauncherSystem.create({
        labels: [{ name: 'small' }],
        providers: [{
          name: 'hosts', driver: 'static',
          pools: [{ name: 'main', nodes: [{ name: sshd.host, 'connection-port': sshd.port, labels: ['small'], 'max-parallel-jobs': 2, 'host-key': sshd.hostKey('ed25519'), timeout: 10 }] }],
        }],
        launcher: { 'delete-interval': 60, 'cleanup-interval': 60 },
        ...(zk ? { extra: { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: `/slot-return-${randomUUID()}` }] } } : {}),
      });
      await sys.startServer();
      await sys.waitForNodes('2 ready slots', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 30_000);
    });
    after(async () => {
      await sys?.stop();
      await sshd?.stop();
      await zk?.stop();
      await stopAllProcesses();
    });

    it('registers the slot of a used node again within seconds with delete-interval 60 s', async () => {
      const client = await sys.client();
      const [node] = await client.requestNodes(['small'], { timeoutMs: 20_000 });
      assert.ok(node, 'a node is handed out');
      const t0 = Date.now();
      await client.release(node.id);
      const nodes = await sys.waitForNodes('the slot ready again as a new node', (ns) =>
        !ns.some((n) => n.id === node.id) && ns.filter((n) => n.state === 'ready').length === 2, BACK_WITHIN_MS);
      const fresh = nodes.find((n) => n.slot === node.slot && n.state === 'ready');
      assert.ok(fresh && fresh.id !== node.id, 'the same slot is registered as a new node');
      assert.ok(fresh.created >= t0, 'registered after the return');
    });

    it('serves a request waiting for a slot with the slot a consumer returns', async () => {
      const holder = await sys.client('holder');
      const held = await holder.requestNodes(['small', 'small'], { timeoutMs: 20_000 });
      assert.equal(held.length, 2, 'both slots in use');
      const client = await sys.client();
      const waiting = await client.request(['small']);
      await sys.waitForRequest(waiting.id, ['pending'], 20_000);
      await holder.release((held[0] as { id: string }).id);
      const served = await sys.waitForRequest(waiting.id, ['fulfilled'], BACK_WITHIN_MS);
      assert.equal(served.nodes.length, 1);
      assert.ok(!held.some((n) => served.nodes.includes(n.id)), 'served by the slot registered again, a new node');
      for (const n of await client.accept(served)) await client.release(n.id);
      await holder.release((held[1] as { id: string }).id);
      await sys.waitForNodes('both slots ready again', (ns) => ns.length === 2 && ns.every((n) => n.state === 'ready'), BACK_WITHIN_MS);
    });
  });
}
