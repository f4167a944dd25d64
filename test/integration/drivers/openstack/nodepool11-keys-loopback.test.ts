/**
 * Nodepool 11's openstack pool and label keys, checked on the loopback cloud by reading back
 * what Nova and Neutron hold (issue 21), in two launches:
 * - label `meta` (pool `main`, `auto-floating-ip` left at its default true): the server's
 *   metadata (`groups`, `instance-properties`, `dynamic-instance-properties` formatted from the
 *   request's tenant, nodepool_* keys winning over same-named properties), `userdata` in Nova's
 *   `user_data`, the cloud-image's `python-path`/`shell-type`/`username` and Nova's `hostId` on
 *   the node record, a floating IP that goes with the server when the node is deleted;
 * - label `netted` (pool `routed`, `auto-floating-ip: false`, pool `networks` a network of this
 *   file): label `networks: [private]` wins, so the server is on `private` only, with no floating IP.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../../../lib/config/load.js';
import { loadCloud } from '../../../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../../../lib/drivers/openstack/keystone.js';
import { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { OpenStackEnv } from './openstack-env.js';

const TIMEOUT = 120_000;
const USERDATA = '#cloud-config\nruncmd:\n  - [touch, /tmp/nodepool11-userdata]\n';

type Json = Record<string, unknown>;

/** Admin REST reads (and this file's network) on the loopback cloud. */
class CloudReader {
  private constructor(private readonly ks: KeystoneSession) {}

  static async connect(cloud: NovaCloud, name: string): Promise<CloudReader> {
    return new CloudReader(await KeystoneSession.authenticate(await loadCloud(name, { path: cloud.cloudsFile })));
  }

  async call(service: string, p: string, method = 'GET', json?: unknown, expect?: number[]): Promise<{ status: number; body: Json }> {
    const o: Parameters<KeystoneSession['request']>[1] = { method, headers: { 'OpenStack-API-Version': 'compute 2.79' } };
    if (json !== undefined) o.json = json;
    if (expect) o.expect = expect;
    const res = await this.ks.request(`${this.ks.endpoint(service).replace(/\/+$/, '')}${p}`, o);
    return { status: res.status, body: (res.body ? JSON.parse(res.body) : {}) as Json };
  }

  /**
   * Nova's server (admin view: `OS-EXT-SRV-ATTR:user_data`), or undefined when gone: 404, or
   * (for a moment after the delete, while nova-compute finishes) still listed with `vm_state`
   * `deleted`, as the admin sees it.
   */
  async server(id: string): Promise<Json | undefined> {
    const r = await this.call('compute', `/servers/${id}`, 'GET', undefined, [200, 404]);
    const server = r.status === 404 ? undefined : (r.body.server as Json);
    return server?.['OS-EXT-STS:vm_state'] === 'deleted' ? undefined : server;
  }

  /** The floating IPs bound to the server's ports, as Neutron lists them. */
  async floatingIpsOf(serverId: string): Promise<Array<{ id: string; floating_ip_address: string }>> {
    const ports = (await this.call('network', `/v2.0/ports?device_id=${serverId}`)).body.ports as Array<{ id: string }>;
    const out: Array<{ id: string; floating_ip_address: string }> = [];
    for (const port of ports) {
      out.push(...((await this.call('network', `/v2.0/floatingips?port_id=${port.id}`)).body.floatingips as typeof out));
    }
    return out;
  }

  /** Whether Neutron still has this floating IP. */
  async floatingIpExists(id: string): Promise<boolean> {
    return (await this.call('network', `/v2.0/floatingips/${id}`, 'GET', undefined, [200, 404])).status === 200;
  }

  close(): void {
    this.ks.close();
  }
}

describe('Nodepool 11 openstack keys on the loopback cloud', () => {
  let cloud: NovaCloud;
  let env: OpenStackEnv;
  let admin: CloudReader;
  let demo: CloudReader;
  let p: OpenStackProvider;
  /** A network of this file in the demo project: the `routed` pool's, which label `netted` overrides. */
  let ownNet: { id: string; name: string } | undefined;

  before(async () => {
    cloud = await useNovaCloud();
    env = await OpenStackEnv.create(cloud);
    [admin, demo] = await Promise.all([CloudReader.connect(cloud, cloud.adminCloud), CloudReader.connect(cloud, cloud.cloud)]);
    const name = `np11-${env.providerName}`;
    const net = (await demo.call('network', '/v2.0/networks', 'POST', { network: { name } })).body.network as { id: string };
    ownNet = { id: net.id, name };
    await demo.call('network', '/v2.0/subnets', 'POST', { subnet: { network_id: net.id, ip_version: 4, cidr: '10.77.0.0/24', name } });
    const image = cloud.image.name;
    const yaml = JSON.stringify({
      'clouds-file': cloud.cloudsFile,
      labels: [{ name: 'meta' }, { name: 'netted' }],
      providers: [{
        name: env.providerName, cloud: cloud.cloud, 'region-name': cloud.region, 'launch-timeout': 60, 'boot-timeout': 5,
        'cloud-images': [{ name: image, username: 'np11-user', 'python-path': '/usr/bin/python3', 'shell-type': 'csh' }],
        pools: [
          {
            name: 'main', networks: [cloud.network.name], 'host-key-checking': false,
            labels: [{
              name: 'meta', 'cloud-image': image, 'flavor-name': 'm1.tiny', userdata: USERDATA,
              'instance-properties': { owner: 'ci', nodepool_node_id: 'spoofed', nodepool_pool_name: 'spoofed', nodepool_provider_name: 'spoofed' },
              'dynamic-instance-properties': { tenant: 'tenant-{request.tenant_name}', broken: '{request.no_such_attr}' },
            }],
          },
          {
            name: 'routed', networks: [name], 'auto-floating-ip': false, 'host-key-checking': false,
            labels: [{ name: 'netted', 'cloud-image': image, 'flavor-name': 'm1.tiny', networks: [cloud.network.name] }],
          },
        ],
      }],
    });
    const config = parseConfig(yaml, path.join(env.dir, 'nodepool.yaml'));
    const pc = config.providers.find((x) => x.name === env.providerName);
    if (pc?.driver !== 'openstack') throw new Error('test config has no openstack provider');
    p = new OpenStackProvider(pc, env.ctx(config), { quotaCacheMs: 0, imageCacheMs: 0 });
    await p.start();
  });

  after(async () => {
    await p?.stop();
    if (env) {
      await env.removeServers();
      await env.close();
    }
    if (ownNet) await demo.call('network', `/v2.0/networks/${ownNet.id}`, 'DELETE', undefined, [204, 404]);
    admin?.close();
    demo?.close();
  });

  /** Creates a building node of `label` in `pool` for a request of tenant `t1`, launches it and waits for its outcome. */
  async function launch(label: string, pool: string): Promise<NodeRecord> {
    const request = await env.store.createRequest({ labels: [label], requestor: 'nodepool11-keys-test', tenantName: 't1' });
    const handler = p.getRequestHandler(pool, request);
    const node = await env.store.createNode({
      state: 'building', provider: p.name, pool, labels: [label], launcher: `${os.hostname()}-test`, ...handler.nodeMetadata(label),
    });
    handler.launch(node);
    await waitFor(() => handler.launchesComplete(), { timeoutMs: TIMEOUT, what: `the launch of node ${node.id}` });
    const done = await env.store.getNode(node.id);
    assert.ok(done);
    assert.equal(done.state, 'ready', String(done.reason));
    return done;
  }

  it('label meta: metadata, userdata, image node fields, hostId, and a floating IP deleted with the node', async () => {
    const node = await launch('meta', 'main');
    assert.ok(node.externalId);
    const server = await admin.server(node.externalId);
    assert.ok(server, 'the server is in Nova');
    assert.deepEqual(server.metadata, {
      groups: `${p.name},${cloud.image.name},meta`,
      owner: 'ci',
      tenant: 'tenant-t1',
      nodepool_node_id: node.id,
      nodepool_pool_name: 'main',
      nodepool_provider_name: p.name,
      nodepool_image_name: cloud.image.name,
      nodepool_node_label: 'meta',
      // Ours, beside Nodepool's keys: leak cleanup leaves another installation's servers alone.
      nodepool_installation_id: await env.store.installationId(),
    }, 'a dynamic property that cannot be formatted is left out');
    assert.equal(env.logged('dynamic-instance-properties: skipped a key that could not be formatted').map((l) => l.key).join(), 'broken');
    const userData = server['OS-EXT-SRV-ATTR:user_data'];
    assert.equal(typeof userData, 'string', 'Nova keeps user_data');
    assert.equal(Buffer.from(userData as string, 'base64').toString('utf8'), USERDATA);

    assert.deepEqual([node.username, node.pythonPath, node.shellType], ['np11-user', '/usr/bin/python3', 'csh'], 'the cloud-image keys');
    assert.equal(typeof server.hostId, 'string');
    assert.ok(server.hostId, 'Nova gives a hostId');
    assert.equal(node.hostId, server.hostId);

    const fips = await demo.floatingIpsOf(node.externalId);
    assert.equal(fips.length, 1, 'auto-floating-ip (default true) gave one floating IP');
    const fip = fips[0] as { id: string; floating_ip_address: string };
    assert.equal(node.publicIpv4, fip.floating_ip_address);
    assert.equal(node.interfaceIp, fip.floating_ip_address);

    await p.cleanupNode(node);
    await env.store.deleteNode(node.id);
    assert.equal(await admin.server(node.externalId), undefined, 'the server is gone');
    assert.equal(await admin.floatingIpExists(fip.id), false, 'its floating IP is deleted with it');
  });

  it('label netted: label networks win over the pool\'s, and auto-floating-ip false gives no floating IP', async () => {
    const node = await launch('netted', 'routed');
    assert.ok(node.externalId);
    const server = await admin.server(node.externalId);
    assert.ok(server);
    const addresses = server.addresses as Record<string, Array<{ addr: string; 'OS-EXT-IPS:type': string }>>;
    assert.deepEqual(Object.keys(addresses), [cloud.network.name], `on the label's network, not the pool's ${ownNet?.name}`);
    assert.deepEqual(addresses[cloud.network.name]?.map((a) => a['OS-EXT-IPS:type']), ['fixed']);
    assert.deepEqual(await demo.floatingIpsOf(node.externalId), [], 'no floating IP');
    assert.equal(node.publicIpv4, null);
    assert.equal(node.interfaceIp, node.privateIpv4);
    assert.equal(node.interfaceIp, addresses[cloud.network.name]?.[0]?.addr);
    await p.cleanupNode(node);
    await env.store.deleteNode(node.id);
    assert.equal(await admin.server(node.externalId), undefined);
  });
});
