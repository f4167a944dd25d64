/**
 * The driver contract against the loopback Nova cloud: a `cloud-image` label on m1.tiny in
 * the private network, host-key checking off (the fake driver's servers have no network).
 */
import { openstackDriver } from '../../../../lib/drivers/openstack/index.js';
import { driverContract } from '../../../contract/driver.contract.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { OpenStackEnv } from './openstack-env.js';

let cloud: NovaCloud | undefined;
let env: OpenStackEnv | undefined;

driverContract('openstack', {
  driver: openstackDriver,
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
  },
});
