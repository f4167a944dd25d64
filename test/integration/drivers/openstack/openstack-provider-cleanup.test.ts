/**
 * The openstack provider against the loopback Nova cloud, after its launches: leak cleanup
 * (past corrupt records and another installation's servers), a host that does not answer
 * within boot-timeout, stop during a launch, and the node list. Booting, flavors, retries and
 * the pool's quota are in openstack-provider.test.ts.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import { INSTALLATION_PROPERTY } from '../../../../lib/store/installation.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { sqliteSpoiler } from '../../../contract/spoil.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { OpenStackEnv, type ProviderYamlOptions } from './openstack-env.js';

const TIMEOUT = 120_000;

describe('openstack provider on the loopback cloud: cleanup, boot-timeout, stop, node list', () => {
  let cloud: NovaCloud;
  let env: OpenStackEnv;

  before(async () => {
    cloud = await useNovaCloud();
    env = await OpenStackEnv.create(cloud);
  });

  afterEach(() => env.reset());

  after(() => env?.finish());

  const provider = (o: ProviderYamlOptions = {}): Promise<OpenStackProvider> => env.startProvider(o);
  const launch = (p: OpenStackProvider, label: string, pool = 'main'): Promise<NodeRecord> => env.launch(p, label, pool);

  /** Our servers as Nova lists them (with metadata and flavor). */
  async function ourServers(p: OpenStackProvider) {
    return (await (await p.nova()).listServers()).filter((s) => s.metadata.nodepool_provider_name === p.name);
  }

  it('marks a server whose node record vanished for deletion', async () => {
    const p = await provider();
    const node = await launch(p, 'tiny');
    assert.equal(node.state, 'ready', String(node.reason));
    await p.cleanupLeakedResources();
    assert.deepEqual((await env.store.listNodes({ provider: p.name })).map((n) => n.id), [node.id], 'no leak while the record exists');
    await env.store.deleteNode(node.id);
    await p.cleanupLeakedResources();
    const marked = await env.store.listNodes({ provider: p.name });
    assert.equal(marked.length, 1);
    assert.deepEqual(
      [marked[0]?.state, marked[0]?.externalId, marked[0]?.reason, marked[0]?.pool, marked[0]?.labels],
      ['deleting', node.externalId, 'leaked', 'main', ['tiny']],
    );
    assert.deepEqual(env.leaks.slice(-1), [['server', 1]], 'the leak is reported (metrics)');
    const reported = env.leaks.length;
    await p.cleanupLeakedResources();
    assert.equal((await env.store.listNodes({ provider: p.name })).length, 1, 'a marked server is not marked twice');
    assert.equal(env.leaks.length, reported, 'and not reported twice');
    await p.cleanupNode(marked[0] as NodeRecord);
    assert.deepEqual(await ourServers(p), []);
  });

  it('keeps the server of a node whose record does not validate through the leak pass, and marks it once the record is gone', async () => {
    const p = await provider();
    const byExternalId = await launch(p, 'tiny');
    const byNodeId = await launch(p, 'tiny');
    assert.equal(byExternalId.state, 'ready', String(byExternalId.reason));
    assert.equal(byNodeId.state, 'ready', String(byNodeId.reason));
    // As Zuul writing records in a form this version does not know: states it has never heard of;
    // the second with no readable external id either, so only the node id in its server's metadata names it.
    const spoil = sqliteSpoiler(env.dbFile);
    await spoil({ kind: 'node', id: byExternalId.id }, 'unknown-state');
    await spoil({ kind: 'node', id: byNodeId.id }, 'unknown-state');
    const db = new Database(env.dbFile, { timeout: 5000 });
    try {
      db.prepare('UPDATE nodes SET external_id = NULL WHERE id = ?').run(byNodeId.id);
    } finally {
      db.close();
    }
    assert.deepEqual(await env.store.listNodes({ provider: p.name }), [], 'the store refuses both records');
    const leaksBefore = env.leaks.length;
    assert.deepEqual((await env.store.listCorruptNodes()).map((c) => [c.id, c.externalId]), [[byExternalId.id, byExternalId.externalId], [byNodeId.id, null]]);
    await p.cleanupLeakedResources();
    await p.cleanupLeakedResources();
    assert.deepEqual(await env.store.listNodes({ provider: p.name }), [], 'no record was made to delete either server');
    assert.deepEqual((await ourServers(p)).map((s) => s.id).sort(), [byExternalId.externalId, byNodeId.externalId].sort(), 'both servers stay');
    assert.deepEqual(env.leaks.slice(leaksBefore), [], 'and no leak is reported');
    assert.equal(await env.store.deleteNode(byExternalId.id), true);
    assert.equal(await env.store.deleteNode(byNodeId.id), true);
    await p.cleanupLeakedResources();
    const marked = await env.store.listNodes({ provider: p.name });
    assert.deepEqual(marked.map((n) => [n.state, n.reason]), [['deleting', 'leaked'], ['deleting', 'leaked']], 'once deleted, the records\' servers are leaks');
    for (const n of marked) await p.cleanupNode(n);
    assert.deepEqual(await ourServers(p), []);
  });

  it("leaves a server of another installation with the same provider name alone, and still cleans up a server that names no installation", async () => {
    const p = await provider();
    const node = await launch(p, 'tiny');
    assert.equal(node.state, 'ready', String(node.reason));
    const mine = (await ourServers(p)).find((s) => s.id === node.externalId);
    assert.equal(mine?.metadata[INSTALLATION_PROPERTY], await env.store.installationId(), 'the server carries its installation');
    assert.equal(mine?.metadata.nodepool_node_id, node.id, "Nodepool 11's keys are as they were");
    // A second installation (its own store) with a provider of the same name on the same cloud.
    const other = await OpenStackEnv.create(cloud, env.providerName);
    try {
      const q = await other.startProvider();
      assert.notEqual(await q.installation(), await p.installation());
      // A server made before servers carried an installation (or by Nodepool): judged as before.
      const label = p.labelConfig('tiny');
      assert.ok(label);
      const nova = await q.nova();
      const bare = await nova.createServer({
        name: 'no-installation', imageId: cloud.image.id, flavorId: (await q.flavorFor(label)).id, networkIds: await q.networkIds([cloud.network.name]),
        metadata: { nodepool_provider_name: p.name, nodepool_node_id: '0000009999', nodepool_pool_name: 'main' },
      });
      await q.cleanupLeakedResources();
      const marked = await other.store.listNodes();
      assert.deepEqual(marked.map((n) => n.externalId), [bare], "only the server without an installation is the other installation's leak");
      assert.deepEqual(await env.store.listNodes({ provider: p.name }).then((ns) => ns.map((n) => [n.id, n.state])), [[node.id, 'ready']]);
      for (const n of marked) await q.cleanupNode(n);
      assert.deepEqual((await ourServers(p)).map((s) => s.id), [node.externalId], 'the first installation\'s server stays');
    } finally {
      await other.close();
    }
  });

  it('fails a node whose host does not answer within boot-timeout, after scanning for host keys', async () => {
    const p = await provider({ extra: { 'launch-retries': 1, 'boot-timeout': 2 }, poolExtra: { 'host-key-checking': true } });
    const t0 = Date.now();
    const node = await launch(p, 'tiny');
    assert.equal(node.state, 'failed');
    assert.match(String(node.reason), /failed its host check within boot-timeout 2 s/);
    assert.ok(Date.now() - t0 < 60_000);
    assert.deepEqual(await ourServers(p), [], 'the server of the failed attempt is deleted');
  });

  it('abandons a launch in flight when the provider stops, leaving the server to the deleter', async () => {
    const p = await provider({ extra: { 'launch-retries': 1, 'boot-timeout': 300 }, poolExtra: { 'host-key-checking': true } });
    const handler = p.getRequestHandler('main', await env.store.createRequest({ labels: ['tiny'], requestor: 'openstack-test' }));
    const node = await env.store.createNode({ state: 'building', provider: p.name, pool: 'main', labels: ['tiny'], ...handler.nodeMetadata('tiny') });
    handler.launch(node);
    await waitFor(async () => (await env.store.getNode(node.id))?.externalId, { timeoutMs: TIMEOUT, what: 'the server id to be recorded' });
    await waitFor(async () => (await ourServers(p)).some((s) => s.status === 'ACTIVE'), { timeoutMs: TIMEOUT, what: 'the server to be ACTIVE' });
    const t0 = Date.now();
    await p.stop();
    // Promptly, not after boot-timeout (300 s): 30 s allows for a loaded machine (at load 11 it took over 10).
    await waitFor(() => handler.launchesComplete(), { timeoutMs: 30_000, what: 'the launch to end after stop' });
    assert.ok(Date.now() - t0 < 30_000);
    const done = await env.store.getNode(node.id);
    assert.equal(done?.state, 'failed');
    assert.match(String(done?.reason), /is stopping/);
    assert.ok(done?.externalId, 'the server stays recorded for the deleter');
    const again = await provider();
    await again.cleanupNode(done);
    assert.deepEqual(await ourServers(again), []);
  });

  it('lists availability zones and lists only our servers as nodes', async () => {
    const p = await provider();
    assert.ok((await (await p.nova()).listAvailabilityZones()).length > 0);
    const node = await launch(p, 'tiny');
    const listed = await p.listNodes();
    assert.deepEqual(listed.map((n) => [n.externalId, n.nodeId, n.provider, n.status]), [[node.externalId, node.id, p.name, 'ACTIVE']]);
  });
});
