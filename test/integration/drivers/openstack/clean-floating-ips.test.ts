/**
 * Nodepool's `clean-floating-ips` on the loopback cloud's Neutron: with it, a leak-cleanup pass
 * deletes the project's floating IPs bound to no port and leaves a bound one; without it (the
 * default), an unbound floating IP stays.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
import type { NeutronClient } from '../../../../lib/drivers/openstack/neutron.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { OpenStackEnv, type ProviderYamlOptions } from './openstack-env.js';

describe('clean-floating-ips on the loopback cloud', () => {
  let cloud: NovaCloud;
  let env: OpenStackEnv;
  const made: string[] = [];
  let neutronOf: NeutronClient | undefined;

  before(async () => {
    cloud = await useNovaCloud();
    env = await OpenStackEnv.create(cloud);
  });

  after(async () => {
    for (const id of made) await neutronOf?.deleteFloatingIp(id);
    if (env) await env.close();
  });

  async function provider(o: ProviderYamlOptions): Promise<{ p: OpenStackProvider; neutron: NeutronClient }> {
    const { config, provider: pc } = env.config(o);
    const p = new OpenStackProvider(pc, env.ctx(config), { quotaCacheMs: 0, imageCacheMs: 0 });
    await p.start();
    const neutron = await p.neutron();
    assert.ok(neutron, 'the loopback cloud has a network service');
    neutronOf = neutron;
    return { p, neutron };
  }

  /** A floating IP allocated to the project and bound to no port. */
  async function unbound(neutron: NeutronClient): Promise<string> {
    const [external] = await neutron.externalNetworks();
    assert.ok(external, 'the loopback cloud has an external network');
    const fip = await neutron.createFloatingIp(external);
    made.push(fip.id);
    return fip.id;
  }

  const ids = async (neutron: NeutronClient): Promise<string[]> => (await neutron.unattachedFloatingIps()).map((f) => f.id);

  it('leaves unbound floating IPs alone by default', async () => {
    const { p, neutron } = await provider({});
    try {
      const id = await unbound(neutron);
      await p.cleanupLeakedResources();
      assert.ok((await ids(neutron)).includes(id), 'the unbound floating IP is still there');
    } finally {
      await p.stop();
    }
  });

  it('deletes the unbound floating IPs at each leak-cleanup pass when set', async () => {
    const { p, neutron } = await provider({ extra: { 'clean-floating-ips': true } });
    try {
      const id = await unbound(neutron);
      assert.ok((await ids(neutron)).includes(id));
      await p.cleanupLeakedResources();
      assert.deepEqual(await ids(neutron), [], 'no unbound floating IP is left');
    } finally {
      await p.stop();
    }
  });
});
