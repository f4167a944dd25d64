/**
 * The full loopback cloud (test/support/openstack-full.ts) as a Nodepool driver sees it: the
 * demo user boots, lists and deletes servers over plain REST (token and endpoints from
 * Keystone), quotas refuse boots, and an unschedulable flavor ends in ERROR.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadCloud } from '../../../lib/drivers/openstack/clouds-yaml.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { useNovaCloud, type NovaCloud } from '../../support/openstack-full.js';

interface Catalog {
  token: { catalog: Array<{ type: string; endpoints: Array<{ interface: string; region_id: string; url: string }> }> };
}

interface Server {
  id: string;
  status: string;
  addresses: Record<string, Array<{ addr: string }>>;
  metadata: Record<string, string>;
  fault?: { message: string };
}

/** The demo user's token and compute endpoint, with fetch only. */
async function demoCompute(cloud: NovaCloud): Promise<{ token: string; compute: string }> {
  const c = await loadCloud(cloud.cloud, { path: cloud.cloudsFile });
  const res = await fetch(`${cloud.authUrl}/auth/tokens`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ auth: {
      identity: { methods: ['password'], password: { user: { name: c.username, domain: { name: 'Default' }, password: c.password } } },
      scope: { project: { name: c.projectName, domain: { name: 'Default' } } },
    } }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const token = res.headers.get('x-subject-token') ?? '';
  const body = (await res.json()) as Catalog;
  const svc = body.token.catalog.find((s) => s.type === 'compute');
  const ep = svc?.endpoints.find((e) => e.interface === 'public' && e.region_id === cloud.region);
  assert.ok(ep, 'compute endpoint in the catalog');
  return { token, compute: ep.url };
}

describe('the full loopback cloud (Nova, Neutron, Placement)', () => {
  let cloud: NovaCloud;
  let api: { token: string; compute: string };
  const prefix = `nova-cloud-test-${randomUUID().slice(0, 8)}`;
  const created: string[] = [];

  const call = async (method: string, p: string, body?: unknown): Promise<Response> => fetch(`${api.compute}${p}`, {
    method,
    headers: { 'X-Auth-Token': api.token, 'Content-Type': 'application/json', 'OpenStack-API-Version': 'compute 2.79' },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const flavor = (name: string): string => {
    const f = cloud.flavors.find((x) => x.name === name);
    assert.ok(f, `flavor ${name}`);
    return f.id;
  };
  const boot = async (name: string, flavorName: string, metadata: Record<string, string> = {}): Promise<Response> => {
    const res = await call('POST', '/servers', { server: {
      name, imageRef: cloud.image.id, flavorRef: flavor(flavorName), networks: [{ uuid: cloud.network.id }], metadata,
    } });
    if (res.status === 202) created.push(((await res.clone().json()) as { server: { id: string } }).server.id);
    return res;
  };
  const server = async (id: string): Promise<Server | undefined> => {
    const res = await call('GET', `/servers/${id}`);
    if (res.status === 404) return undefined;
    assert.equal(res.status, 200);
    return ((await res.json()) as { server: Server }).server;
  };
  const waitStatus = (id: string, status: string, timeoutMs = 90_000): Promise<Server> =>
    waitFor(async () => {
      const s = await server(id);
      return s?.status === status ? s : undefined;
    }, { timeoutMs, what: `server ${id} ${status}`, intervalMs: 250 });

  before(async () => {
    cloud = await useNovaCloud();
    api = await demoCompute(cloud);
  });

  after(async () => {
    if (!cloud) return;
    await cloud.setComputeQuota('demo', { instances: -1 });
    for (const id of created) await call('DELETE', `/servers/${id}`);
    await waitFor(async () => (await Promise.all(created.map(server))).every((s) => s === undefined),
      { timeoutMs: 60_000, what: 'test servers deleted', intervalMs: 250 });
  });

  it('describes flavors, the private network and the tiny image', () => {
    assert.match(cloud.authUrl, /^http:\/\/127\.0\.0\.1:\d+\/v3$/);
    assert.deepEqual(cloud.flavors.map((f) => [f.name, f.vcpus, f.ram]),
      [['m1.tiny', 1, 512], ['m1.small', 1, 2048], ['m1.medium', 2, 4096], ['np.huge', 4096, 512]]);
    assert.equal(cloud.network.name, 'private');
    assert.equal(cloud.image.name, 'loopback-tiny');
    assert.deepEqual([cloud.cloud, cloud.adminCloud, cloud.region], ['loopback', 'loopback-admin', 'RegionOne']);
  });

  it('boots a server to ACTIVE with an address and metadata, then deletes it', async () => {
    const name = `${prefix}-boot`;
    const res = await boot(name, 'm1.tiny', { nodepool_provider_name: 'x' });
    assert.equal(res.status, 202, await res.clone().text());
    const id = ((await res.json()) as { server: { id: string } }).server.id;
    const active = await waitStatus(id, 'ACTIVE');
    const addr = active.addresses.private?.[0]?.addr ?? '';
    assert.match(addr, /^10\.1\.0\.\d+$/);
    const listed = (await cloud.listAllServers()).find((s) => s.id === id);
    assert.deepEqual(listed && { name: listed.name, status: listed.status, metadata: listed.metadata },
      { name, status: 'ACTIVE', metadata: { nodepool_provider_name: 'x' } });
    assert.equal((await call('DELETE', `/servers/${id}`)).status, 204);
    await waitFor(async () => (await server(id)) === undefined, { timeoutMs: 60_000, what: `server ${id} gone`, intervalMs: 250 });
    assert.equal((await cloud.listAllServers()).some((s) => s.id === id), false);
  });

  it('refuses a boot with 403 when the instance quota is used up', async () => {
    await cloud.setComputeQuota('demo', { instances: 0 });
    try {
      const res = await boot(`${prefix}-quota`, 'm1.tiny');
      assert.equal(res.status, 403, await res.clone().text());
      assert.match(await res.text(), /[Qq]uota exceeded/);
    } finally {
      await cloud.setComputeQuota('demo', { instances: -1 });
    }
  });

  it('puts a server whose flavor no host can take into ERROR (no valid host)', async () => {
    const res = await boot(`${prefix}-huge`, 'np.huge');
    assert.equal(res.status, 202, await res.clone().text());
    const id = ((await res.json()) as { server: { id: string } }).server.id;
    const failed = await waitStatus(id, 'ERROR');
    assert.match(failed.fault?.message ?? '', /No valid host/);
  });
});
