/**
 * The openstack provider against the loopback Nova cloud: booting diskimage uploads with
 * nodepool's metadata, flavor choice, launch retries ending in a failed node, and the pool's
 * quota (max-servers, max-cores and max-ram). Leak cleanup, boot-timeout, stop during a launch
 * and the node list are in openstack-provider-cleanup.test.ts (two files of about ten boots
 * each run beside each other; as one, on a loaded machine, it passed its 10-minute bound). The
 * cloud's own quota is in openstack-provider-quota.test.ts (it changes the shared project's
 * quota, so it runs alone).
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
import { INSTALLATION_PROPERTY } from '../../../../lib/store/installation.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { OpenStackEnv, type ProviderYamlOptions } from './openstack-env.js';

describe('openstack provider on the loopback cloud', () => {
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

  it('boots the newest ready upload of a diskimage with nodepool metadata on the server', async () => {
    const p = await provider();
    assert.equal(await p.labelReady('disk'), false, 'no upload yet');
    const build = await env.store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    const older = await env.store.createUpload({ buildId: build.id, provider: p.name, imageName: 'deb', externalName: 'deb-1' });
    await env.store.updateUpload(older.id, { state: 'ready', externalId: 'no-such-image' });
    const upload = await env.store.createUpload({ buildId: build.id, provider: p.name, imageName: 'deb', externalName: 'deb-2' });
    await env.store.updateUpload(upload.id, { state: 'ready', externalId: cloud.image.id });
    assert.equal(await p.labelReady('disk'), true);

    const node = await launch(p, 'disk');
    assert.equal(node.state, 'ready', String(node.reason));
    assert.equal(node.image, upload.id);
    assert.equal(node.username, 'debian');
    assert.deepEqual([node.connectionType, node.connectionPort], ['ssh', 22]);
    assert.equal(node.hostname, `disk-${p.name}-${node.id}`);
    assert.deepEqual(node.hostKeys, []);
    // auto-floating-ip (Nodepool's default true): the cloud's external network gives the node its public address.
    assert.ok(node.interfaceIp && node.publicIpv4 === node.interfaceIp && node.privateIpv4, `floating address used: ${node.interfaceIp}`);
    assert.equal(node.cloud, cloud.cloud);
    assert.equal(node.region, cloud.region);
    assert.ok(node.az, 'availability zone from the server');

    const server = (await cloud.listAllServers()).find((s) => s.id === node.externalId);
    assert.ok(server, 'the server is in Nova');
    assert.deepEqual(server.metadata, {
      groups: `${p.name},deb,disk`,
      owner: 'ci',
      nodepool_provider_name: p.name,
      nodepool_pool_name: 'main',
      nodepool_node_id: node.id,
      nodepool_image_name: 'deb',
      nodepool_node_label: 'disk',
      [INSTALLATION_PROPERTY]: await env.store.installationId(),
    });
  });

  it('chooses the smallest flavor with enough RAM for min-ram', async () => {
    const p = await provider();
    const node = await launch(p, 'small');
    assert.equal(node.state, 'ready', String(node.reason));
    const small = cloud.flavors.find((f) => f.name === 'm1.small');
    assert.deepEqual(node.resources, { cores: small?.vcpus, ram: small?.ram, instances: 1 });
    const [server] = await ourServers(p);
    assert.equal(server?.flavor?.name, 'm1.small');
  });

  it('retries a server that goes to ERROR, then fails the node with Nova\'s fault and leaves no server', async () => {
    const p = await provider({ extra: { 'launch-retries': 3 } });
    const node = await launch(p, 'huge');
    assert.equal(node.state, 'failed');
    assert.match(String(node.reason), /^launch failed after 3 attempts: server \S+ went to ERROR: No valid host/);
    assert.equal(node.externalId, null, 'the failed server is no longer the node\'s');
    const created = env.logged('server created').filter((l) => String(l.name).endsWith(node.id));
    assert.equal(created.length, 3, 'one server per attempt');
    assert.equal(env.logged('failed server deleted').filter((l) => created.some((c) => c.id === l.externalId)).length, 3);
    assert.deepEqual(await ourServers(p), [], 'no server left');
  });

  it('declines a request larger than the pool and pauses at the pool\'s max-servers', async () => {
    const p = await provider({ cappedMaxServers: 2 });
    const request = await env.store.createRequest({ labels: ['tiny', 'tiny', 'tiny'], requestor: 'openstack-test' });
    const handler = p.getRequestHandler('capped', request);
    assert.equal(await handler.hasProviderQuota(['tiny', 'tiny', 'tiny']), false);
    assert.equal(await handler.hasProviderQuota(['tiny', 'tiny']), true);
    assert.equal(await handler.hasRemainingQuota('tiny'), true);
    const first = await launch(p, 'tiny', 'capped');
    assert.equal(first.state, 'ready', String(first.reason));
    await env.store.createNode({ state: 'building', provider: p.name, pool: 'capped', labels: ['tiny'] });
    assert.equal(await handler.hasRemainingQuota('tiny'), false, 'two nodes in a pool of two');
    assert.equal(await p.getRequestHandler('main', request).hasRemainingQuota('tiny'), true, 'another pool is not limited by it');
    await p.cleanupNode(first);
    await env.store.deleteNode(first.id);
    assert.equal(await handler.hasRemainingQuota('tiny'), true);
  });

  it('keeps a pool within max-cores and max-ram: a label too big declines, a full pool has no room', async () => {
    const p = await provider({ poolExtra: { 'max-cores': 1, 'max-ram': 1024 } });
    const request = await env.store.createRequest({ labels: ['tiny'], requestor: 'openstack-test' });
    const handler = p.getRequestHandler('main', request);
    assert.equal(await handler.hasProviderQuota(['small']), false, 'm1.small (2048 MB) exceeds max-ram 1024');
    assert.equal(await handler.hasProviderQuota(['tiny', 'tiny']), false, 'two m1.tiny need 2 cores');
    assert.equal(await handler.hasProviderQuota(['tiny']), true);
    const first = await launch(p, 'tiny');
    assert.equal(first.state, 'ready', String(first.reason));
    assert.deepEqual(first.resources, { cores: 1, ram: 512, instances: 1 });
    assert.equal(await handler.hasRemainingQuota('tiny'), false, 'the one core is used');
    assert.equal(await p.getRequestHandler('capped', request).hasRemainingQuota('tiny'), true, 'another pool is not limited by it');
    await p.cleanupNode(first);
    await env.store.deleteNode(first.id);
    assert.equal(await handler.hasRemainingQuota('tiny'), true, 'room again once the node is gone');
  });
});
