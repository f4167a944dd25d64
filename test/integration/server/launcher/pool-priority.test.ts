/**
 * Nodepool 11 pool priority on real parts: two static providers (real sshd hosts on loopback),
 * nodepool-server in this process, on a SQLite store and on a ZooKeeper store. The preferred
 * pool (pool priority 10, overriding its provider's 200) serves every request while it has a
 * free host; once it is full (its standing, published on its registration) the other pool
 * (provider priority 50) takes the next request at once; when both are full the request waits
 * on the preferred pool (paused, as Nodepool), which serves it once its host is back.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../../../lib/lifecycle.js';
import type { LauncherRecord } from '../../../../lib/store/models.js';
import { LauncherSystem } from '../../../support/launcher-system.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';
import { stopAllProcesses } from '../../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../../support/zookeeper.js';

for (const backend of ['sqlite', 'zookeeper'] as const) {
  void describe(`launcher: pool priority (${backend} store)`, () => {
    let preferred: SshdHandle;
    let fallback: SshdHandle;
    let zk: ZooKeeperHandle | undefined;
    let sys: LauncherSystem;

    before(async () => {
      [preferred, fallback] = await Promise.all([startSshd(), startSshd()]);
      if (backend === 'zookeeper') zk = await startZooKeeper();
      const node = (h: SshdHandle): Record<string, unknown> => ({
        name: h.host, 'connection-port': h.port, labels: ['small'], 'host-key': h.hostKey('ed25519'), timeout: 10,
      });
      sys = await LauncherSystem.create({
        labels: [{ name: 'small' }],
        providers: [
          { name: 'second', driver: 'static', priority: 50, pools: [{ name: 'main', nodes: [node(fallback)] }] },
          { name: 'first', driver: 'static', priority: 200, pools: [{ name: 'main', priority: 10, nodes: [node(preferred)] }] },
        ],
        ...(zk ? { extra: { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: `/priority-${randomUUID().slice(0, 8)}` }], 'zookeeper-timeout': 5 } } : {}),
      });
      await sys.startServer();
      await sys.waitForNodes('2 ready static nodes', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 30_000);
    });
    after(async () => {
      await sys?.stop();
      for (const s of [preferred, fallback]) await s?.stop();
      await zk?.stop();
      await stopAllProcesses();
    });

    const registrations = async (): Promise<Map<string, LauncherRecord>> =>
      new Map((await sys.store.listLaunchers()).map((l) => [l.provider, l]));

    it('serves from the preferred pool until it waits for a host, then from the other, then from the preferred again', async () => {
      const regs = await waitFor(async () => {
        const r = await registrations();
        return r.size === 2 ? r : undefined;
      }, { timeoutMs: 20_000, what: 'both pools registered' });
      assert.deepEqual([regs.get('first')?.priority, regs.get('first')?.paused], [10, false], 'pool priority overrides the provider one');
      assert.deepEqual([regs.get('second')?.priority, regs.get('second')?.paused], [50, false], 'the provider priority is the pool default');

      const client = await sys.client();
      const [a] = await client.requestNodes(['small'], { timeoutMs: 20_000 });
      assert.equal(a?.provider, 'first', 'the preferred pool serves while it has a free host');
      const full = (provider: string) => waitFor(async () => (await registrations()).get(provider)?.standing?.full?.by === 'max-servers', {
        timeoutMs: 20_000, what: `pool ${provider} published as full`,
      });
      await full('first');

      const [b] = await client.requestNodes(['small'], { timeoutMs: 20_000 });
      assert.equal(b?.provider, 'second', 'the full preferred pool leaves the next request to the other, which has a free host');
      assert.equal((await registrations()).get('first')?.paused, false, 'without pausing');
      await full('second');

      const waiting = await client.request(['small']);
      await sys.waitForRequest(waiting.id, ['pending'], 20_000);
      await waitFor(async () => (await registrations()).get('first')?.paused === true, { timeoutMs: 20_000, what: 'the preferred pool registered as paused' });
      const request = await sys.store.getRequest(waiting.id);
      assert.equal(request?.state, 'pending', 'with both full, the preferred pool holds the request it waits for');

      await client.release(a.id);
      const served = await sys.waitForRequest(waiting.id, ['fulfilled'], 30_000);
      const [node] = await Promise.all(served.nodes.map((id) => sys.store.getNode(id)));
      assert.equal(node?.provider, 'first', 'the waiting request is served by the preferred pool once its host is back');
      await waitFor(async () => (await registrations()).get('first')?.paused === false, { timeoutMs: 20_000, what: 'the preferred pool unpaused' });
      await client.accept(served);
      for (const n of [node?.id, b.id]) if (n) await client.release(n);
    });
  });
}
