/**
 * The server's component registry (server/components/component-registry.ts) against a real
 * ZooKeeper and a real gearmand: the launcher component, and one builder component per builder
 * host gearmand shows while this server leads the image lifecycle; none when another leads;
 * everything removed at stop.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { fn } from '../../../lib/gearman/functions.js';
import { GearmanWorker } from '../../../lib/gearman/worker.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { silentLogger } from '../../../lib/log.js';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { ComponentRegistry } from '../../../server/components/component-registry.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

void describe('the server component registry publishes its launcher and the builders gearmand shows', () => {
  let zk: ZooKeeperHandle;
  let g: GearmandHandle;
  const workers: GearmanWorker[] = [];

  before(async () => {
    [zk, g] = await Promise.all([startZooKeeper(), startGearmand()]);
    const builder = (clientId: string, name: string): GearmanWorker => {
      const w = new GearmanWorker({ servers: [g.address], clientId, log: silentLogger() });
      w.register(name, () => Promise.resolve({ type: 'fail', message: 'not in this test' }));
      workers.push(w);
      return w;
    };
    await builder('nb01.example.org:builder-1', fn.imageBuild('debian')).start();
    await builder('nb02:builder-2', fn.imageUpload('debian-0000000001')).start();
    await waitFor(async () => (await adminWorkers(g.address)).filter((w) => w.functions.length > 0).length === 2,
      { timeoutMs: 10_000, what: 'both builders registered in gearmand', intervalMs: 50 });
  });

  after(async () => {
    for (const w of workers) await w.stop();
    await g?.stop();
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('registers the launcher always and the builders only while leading, and removes them at stop', async () => {
    const store = await ZooKeeperStore.open({ servers: [{ host: zk.host, port: zk.port, chroot: `/registry-${randomUUID().slice(0, 8)}` }] });
    try {
      const session = await store.openSession({ owner: 'nodepool-server', hostname: 'nl01.example.org', pid: 1, ttlMs: 10_000 });
      let leading = true;
      const registry = new ComponentRegistry({
        store, log: silentLogger(), hostname: 'nl01.example.org', sessionId: () => session.id, intervalMs: 60_000,
        builders: { servers: () => [g.address], isLeader: () => Promise.resolve(leading) },
      });
      await registry.pass();
      const hostsOf = async (kind: 'launcher' | 'builder'): Promise<unknown[]> => (await store.listComponents(kind)).map((c) => c.data.hostname);
      assert.deepEqual(await hostsOf('launcher'), ['nl01']);
      assert.deepEqual(await hostsOf('builder'), ['nb01', 'nb02']);
      for (const c of await store.listComponents('builder')) {
        assert.deepEqual([c.data.kind, c.data.model_api, c.data.state], ['builder', 0, 'running']);
      }

      leading = false;
      await registry.pass();
      assert.deepEqual(await hostsOf('builder'), [], 'another server leads: it publishes the builders');
      assert.deepEqual(await hostsOf('launcher'), ['nl01']);

      leading = true;
      registry.start();
      await waitFor(async () => (await hostsOf('builder')).length === 2, { timeoutMs: 10_000, what: 'builders published again by the loop', intervalMs: 50 });
      await registry.stop();
      assert.deepEqual([...await hostsOf('launcher'), ...await hostsOf('builder')], [], 'removed at stop');
    } finally {
      await store.close();
    }
  });
});
