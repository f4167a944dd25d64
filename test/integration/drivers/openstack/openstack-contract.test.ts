/**
 * The driver contract against the loopback Nova cloud: a `cloud-image` label on m1.tiny in
 * the private network, host-key checking off (the fake driver's servers have no network). A
 * node runs while Nova has its server ACTIVE; the leak is a server booted straight through
 * Nova with this provider's metadata and a node id no record has.
 */
import { openstackDriver } from '../../../../lib/drivers/openstack/index.js';
import { loadCloud } from '../../../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../../../lib/drivers/openstack/keystone.js';
import { NovaClient } from '../../../../lib/drivers/openstack/nova.js';
import { driverContract } from '../../../contract/driver.contract.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { OpenStackEnv } from './openstack-env.js';

let cloud: NovaCloud | undefined;
let env: OpenStackEnv | undefined;
let session: Promise<KeystoneSession> | undefined;

/** Nova as the demo project sees it, through a session of the fixture's own (not the driver's). */
const novaOf = async (c: NovaCloud): Promise<NovaClient> =>
  new NovaClient(await (session ??= (async () => KeystoneSession.authenticate(await loadCloud(c.cloud, { path: c.cloudsFile })))()));

driverContract('openstack', {
  driver: openstackDriver,
  nodes: 'launch',
  timeoutMs: 120_000,
  async setUp() {
    cloud = await useNovaCloud();
    env = await OpenStackEnv.create(cloud);
    const { config, provider } = env.config();
    return { config, provider, pool: 'main', label: 'tiny', ctx: env.ctx(config) };
  },
  async tearDown() {
    await env?.removeServers();
    await env?.close();
    (await session?.catch(() => undefined))?.close();
  },
  async runs(node) {
    if (!cloud || !node.externalId) return false;
    return (await (await novaOf(cloud)).getServer(node.externalId))?.status === 'ACTIVE';
  },
  async leak(provider, pool, label) {
    if (!cloud) throw new Error('not set up');
    const c = await novaOf(cloud);
    const flavor = cloud.flavors.find((f) => f.name === 'm1.tiny');
    if (!flavor) throw new Error('the loopback cloud has no m1.tiny');
    const id = await c.createServer({
      name: `${provider.name}-leaked`, flavorId: flavor.id, imageId: cloud.image.id, networkIds: [cloud.network.id],
      metadata: { nodepool_provider_name: provider.name, nodepool_node_id: '9999999999', nodepool_pool_name: pool, nodepool_node_label: label },
    });
    return { what: `server ${id} with no node record`, present: async () => (await c.getServer(id)) !== undefined };
  },
});
