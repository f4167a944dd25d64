/**
 * The launcher with the openstack driver against the real loopback Nova (fake virt driver),
 * beside a static provider with a real sshd: the full image-to-node flow (fake-dib builder →
 * Glance upload → min-ready boot from it → request → release → server deleted in Nova),
 * `nodepool delete --now` of a cloud node, a
 * nodeset across static and openstack, a live provider config change and a live top-level
 * diskimage change (the node keys it gives), Nova failing every
 * boot, and a server killed with -9 while requests are pending.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../../lib/config/load.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import type { DibBuilder } from '../../../../workers/builder/dib-builder.js';
import { startCli } from '../../cli/cli-env.js';
import { fakeDiskimage, inProcessBuilder, type BuilderEnv } from '../../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../../support/gearmand.js';
import { LauncherSystem } from '../../../support/launcher-system.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { stopAllProcesses } from '../../../support/processes.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';

function cloudProvider(nova: NovaCloud, name: string, flavor = 'm1.tiny', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name, driver: 'openstack', cloud: nova.cloud, 'region-name': nova.region, 'launch-timeout': 60, 'launch-retries': 2,
    diskimages: [{ name: 'deb', username: 'debian' }],
    'cloud-images': [{ name: nova.image.name, username: 'cirros' }],
    pools: [{
      name: 'main', networks: [nova.network.name], 'host-key-checking': false, 'max-servers': 10,
      labels: [
        { name: 'cloud-tiny', 'cloud-image': nova.image.name, 'flavor-name': flavor },
        { name: 'disk', diskimage: 'deb', 'flavor-name': 'm1.tiny' },
        { name: 'huge', 'cloud-image': nova.image.name, 'flavor-name': 'np.huge' },
      ],
    }],
    ...extra,
  };
}

/**
 * Deletes this file's servers through the running launcher (the cloud is shared with other
 * test files, so never delete all servers): no min-ready, every node used, wait until gone.
 */
async function drain(sys: LauncherSystem, nova: NovaCloud, provider: string): Promise<void> {
  await sys.rewrite((p) => ({ ...p, labels: p.labels.map((l) => ({ ...l, 'min-ready': 0 })) }));
  await waitFor(async () => {
    for (const n of await sys.store.listNodes({ provider })) {
      if (n.state !== 'deleting' && n.state !== 'used') await sys.store.updateNode(n.id, { state: 'used' }).catch(() => undefined);
    }
    return (await serversOf(nova, provider)).length === 0;
  }, { timeoutMs: 90_000, what: `no server of ${provider} left`, intervalMs: 1000 });
}

/** The provider without diskimages (a server without builders, so no gearmand). */
function withoutImages(p: Record<string, unknown>): Record<string, unknown> {
  const pools = (p.pools as Array<Record<string, unknown>>).map((pool) => ({
    ...pool, labels: (pool.labels as Array<Record<string, unknown>>).filter((l) => l.diskimage === undefined),
  }));
  return { ...p, diskimages: [], pools };
}

/** Servers in Nova tagged with this provider. */
async function serversOf(nova: NovaCloud, provider: string): Promise<Array<{ id: string; metadata: Record<string, string> }>> {
  return (await nova.listAllServers()).filter((s) => s.metadata.nodepool_provider_name === provider);
}

void describe('launcher: openstack beside static, with a builder', () => {
  let nova: NovaCloud;
  let gearmand: GearmandHandle;
  let sshd: SshdHandle;
  let sys: LauncherSystem;
  let builder: DibBuilder;
  const provider = `cloud-${process.pid}`;

  before(async () => {
    nova = await useNovaCloud();
    [gearmand, sshd] = await Promise.all([startGearmand(), startSshd()]);
    sys = await LauncherSystem.create({
      labels: [{ name: 'static-small' }, { name: 'cloud-tiny' }, { name: 'disk', 'min-ready': 1 }, { name: 'huge' }],
      providers: [
        { name: 'hosts', driver: 'static', pools: [{ name: 'main', nodes: [{ name: sshd.host, 'connection-port': sshd.port, labels: ['static-small'], 'host-key': sshd.hostKey('ed25519') }] }] },
        cloudProvider(nova, provider),
      ],
      extra: {
        'clouds-file': nova.cloudsFile,
        'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
        diskimages: [fakeDiskimage('deb')],
        'image-lifecycle': { interval: 1, 'retry-delay': 2, 'max-retry-delay': 8, 'leak-check-interval': 0 },
      },
    });
    builder = inProcessBuilder({ config: loadConfig(sys.configPath) } as BuilderEnv, { hostname: 'builder-a' });
    await builder.start();
    await sys.startServer();
  });
  after(async () => {
    if (sys) await drain(sys, nova, provider).catch((err: unknown) => console.error(`drain: ${String(err)}`));
    await sys?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await gearmand?.stop();
    await sshd?.stop();
    await stopAllProcesses();
  });

  it('builds and uploads the image, boots the min-ready node from it, serves a request, deletes the server on release', async () => {
    const upload = await waitFor(async () => (await sys.store.listUploads({ provider, states: ['ready'] }))[0], { timeoutMs: 90_000, what: 'the upload of deb' });
    const minReady = await sys.waitForNodes('a ready min-ready disk node', (ns) => ns.some((n) => n.labels.includes('disk') && n.state === 'ready' && n.allocatedTo === null), 90_000);
    const node = minReady.find((n) => n.labels.includes('disk') && n.state === 'ready');
    assert.equal(node?.image, upload.id, 'booted from the newest ready upload');
    const server = (await serversOf(nova, provider)).find((s) => s.id === node?.externalId);
    assert.ok(server, 'the server exists in Nova');
    assert.equal(server.metadata.nodepool_node_id, node?.id);
    assert.equal(server.metadata.nodepool_node_label, 'disk');
    assert.equal(server.metadata.nodepool_image_name, 'deb');

    const client = await sys.client();
    const [got] = await client.requestNodes(['disk'], { timeoutMs: 60_000 });
    assert.equal(got?.id, node?.id, 'the ready min-ready node was reused');
    await client.release(got.id);
    await waitFor(async () => !(await nova.listAllServers()).some((s) => s.id === got.externalId), { timeoutMs: 60_000, what: 'the server deleted in Nova' });
    await sys.waitForNodes('min-ready topped up again', (ns) => ns.some((n) => n.labels.includes('disk') && n.state === 'ready' && n.id !== got.id), 60_000);
  });

  it('delete --now removes the server from Nova before the command returns; min-ready replaces the node', async () => {
    const ready = (ns: NodeRecord[]) => ns.filter((n) => n.labels.includes('disk') && n.state === 'ready' && n.allocatedTo === null);
    const [node] = ready(await sys.waitForNodes('a ready disk node', (ns) => ready(ns).length > 0, 90_000));
    assert.ok(node?.externalId);
    const r = await startCli(sys.configPath, ['delete', node.id, '--now']).result;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`Node ${node.id} deleted`));
    // Gone means absent or DELETED: Nova lists a soft-deleted server as DELETED for a moment.
    const left = (await nova.listAllServers()).filter((s) => s.id === node.externalId && s.status !== 'DELETED');
    assert.deepEqual(left, [], 'the server is gone when the command returns');
    assert.equal(await sys.store.getNode(node.id), undefined, 'and so is the record');
    await sys.waitForNodes('min-ready topped up again', (ns) => ready(ns).some((n) => n.id !== node.id), 90_000);
  });

  it('fulfils a nodeset across the static and the openstack provider', async () => {
    const client = await sys.client();
    const nodes = await client.requestNodes(['static-small', 'cloud-tiny'], { timeoutMs: 60_000 });
    assert.deepEqual(nodes.map((n) => n.provider), ['hosts', provider]);
    assert.equal(nodes[0]?.connectionPort, sshd.port);
    assert.ok(nodes[1]?.externalId && nodes[1].interfaceIp);
    for (const n of nodes) await client.release(n.id);
    await waitFor(async () => !(await nova.listAllServers()).some((s) => s.id === nodes[1]?.externalId), { timeoutMs: 60_000, what: 'the cloud node deleted' });
    await sys.waitForNodes('the static host back in stock', (ns) => ns.some((n) => n.provider === 'hosts' && n.state === 'ready'), 30_000);
  });

  it('picks up a provider config change live (the next node gets the new flavor)', async () => {
    await sys.rewrite((p) => ({ ...p, providers: [p.providers[0] as Record<string, unknown>, cloudProvider(nova, provider, 'm1.small')] }));
    const client = await sys.client();
    const [node] = await client.requestNodes(['cloud-tiny'], { timeoutMs: 60_000 });
    assert.equal(node?.resources?.ram, 2048, 'booted with m1.small after the reload');
    await client.release(node.id);
  });

  it('picks up a top-level diskimage\'s python-path and shell-type live (the next node of it records them)', async () => {
    const ready = (ns: NodeRecord[]) => ns.filter((n) => n.labels.includes('disk') && n.state === 'ready' && n.allocatedTo === null);
    const [old] = ready(await sys.waitForNodes('a ready disk node', (ns) => ready(ns).length > 0, 90_000));
    assert.equal(old?.pythonPath, 'auto', 'Nodepool\'s default before the change');
    await sys.rewrite((p) => ({
      ...p, extra: { ...p.extra, diskimages: [{ ...fakeDiskimage('deb'), 'python-path': '/usr/bin/python3', 'shell-type': 'sh' }] },
    }));
    const r = await startCli(sys.configPath, ['delete', old.id, '--now']).result;
    assert.equal(r.code, 0, r.stderr);
    const next = ready(await sys.waitForNodes('min-ready topped up again', (ns) => ready(ns).some((n) => n.id !== old.id), 90_000)).find((n) => n.id !== old.id);
    assert.equal(next?.pythonPath, '/usr/bin/python3');
    assert.equal(next?.shellType, 'sh');
    assert.equal(next?.username, 'debian', 'the provider diskimage\'s username still wins');
  });

  it('fails a request with the reason when Nova fails every boot, after the retries, leaving no server', async () => {
    const client = await sys.client();
    const req = await client.request(['huge']);
    const failed = await sys.waitForRequest(req.id, ['failed'], 120_000);
    assert.match(failed.reason ?? '', /no valid host/i);
    // Only this provider's: other files on the shared cloud boot huge servers of their own.
    await waitFor(async () => !(await serversOf(nova, provider)).some((s) => s.metadata.nodepool_node_label === 'huge'), { timeoutMs: 60_000, what: `no huge server of ${provider} left` });
    await sys.waitForNodes('the failed node deleted', (ns) => !ns.some((n) => n.labels.includes('huge')), 30_000);
  });
});

void describe('launcher: nodepool-server killed with -9 while requests are pending', () => {
  let nova: NovaCloud;
  let sys: LauncherSystem;
  const provider = `crash-${process.pid}`;

  before(async () => {
    nova = await useNovaCloud();
    sys = await LauncherSystem.create({
      labels: [{ name: 'cloud-tiny' }, { name: 'huge' }],
      providers: [withoutImages(cloudProvider(nova, provider))],
      extra: { 'clouds-file': nova.cloudsFile },
    });
  });
  after(async () => {
    await sys?.stop();
    await stopAllProcesses();
  });

  it('serves the requests after a restart and leaks no server in Nova', async () => {
    const first = sys.startServerProcess('server-1');
    await waitFor(async () => (await sys.store.listLaunchers()).length > 0, { timeoutMs: 30_000, what: 'the launcher registered' });
    const client = await sys.client();
    const requests = [];
    for (let i = 0; i < 3; i++) requests.push(await client.request(['cloud-tiny'], { ephemeral: false }));
    await sys.waitForNodes('a node building in Nova', (ns) => ns.some((n) => n.state === 'building' && n.externalId !== null), 30_000);
    await first.kill();
    sys.startServerProcess('server-2');
    // The new server takes the requests over, then boots their servers in Nova: at load 10 (CI
    // on this 2-core machine) one boot took 50-120 s, and 90 s for the three was not enough.
    for (const r of requests) await sys.waitForRequest(r.id, ['fulfilled'], 300_000);
    const nodes = [];
    for (const r of requests) nodes.push(...await client.accept((await sys.store.getRequest(r.id))!));
    assert.equal(nodes.length, 3);
    for (const n of nodes) await client.release(n.id);
    // Everything the dead server started is cleaned: Nova ends with no server of this provider.
    await waitFor(async () => (await serversOf(nova, provider)).length === 0 && (await sys.store.listNodes()).length === 0,
      { timeoutMs: 120_000, what: 'no server and no node left', intervalMs: 500 });
  });
});
