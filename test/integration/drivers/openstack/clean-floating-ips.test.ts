/**
 * Nodepool's `clean-floating-ips` on the loopback cloud's Neutron: with it, a leak-cleanup pass
 * deletes the project's floating IPs bound to no port and leaves one bound to a node's server;
 * without it (the default), an unbound floating IP stays. The project is shared with other
 * files (a server they delete straight through Nova leaves its floating IP unbound), so the
 * checks are on the floating IPs this file made.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
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
    await env?.finish();
  });

  async function provider(o: ProviderYamlOptions): Promise<{ p: OpenStackProvider; neutron: NeutronClient }> {
    const p = await env.startProvider(o);
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

  /** The floating IPs bound to the ports of a server. */
  async function boundTo(neutron: NeutronClient, serverId: string): Promise<string[]> {
    const found: string[] = [];
    for (const port of await neutron.listPorts({ deviceId: serverId })) found.push(...(await neutron.floatingIpsOfPort(port.id)).map((f) => f.id));
    return found;
  }

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

  it('deletes the unbound floating IPs at each leak-cleanup pass when set, and keeps one bound to a server', async () => {
    const { p, neutron } = await provider({ extra: { 'clean-floating-ips': true } });
    try {
      // auto-floating-ip (the default) binds a floating IP to the node's server.
      const node = await env.launch(p, 'tiny');
      assert.equal(node.state, 'ready', String(node.reason));
      assert.ok(node.externalId);
      const bound = await boundTo(neutron, node.externalId);
      assert.equal(bound.length, 1, 'the server has its floating IP');
      const unboundIds = [await unbound(neutron), await unbound(neutron)];
      for (const id of unboundIds) assert.ok((await ids(neutron)).includes(id));
      await p.cleanupLeakedResources();
      const left = await ids(neutron);
      assert.deepEqual(unboundIds.filter((id) => left.includes(id)), [], 'no unbound floating IP of this test is left');
      assert.deepEqual(await boundTo(neutron, node.externalId), bound, 'the bound floating IP stays');
    } finally {
      await p.stop();
    }
  });
});
