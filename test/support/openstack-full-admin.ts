/**
 * Admin REST calls on the full loopback cloud, over plain Keystone-authenticated JSON: the
 * one-time test resources (flavors, networks, router, image, lifted quotas) and the helpers
 * a {@link NovaCloud} offers tests (quotas, listing and deleting every server).
 */
import { readFile } from 'node:fs/promises';
import { KeystoneSession } from '../../lib/drivers/openstack/keystone.js';
import { waitFor } from '../../lib/lifecycle.js';

/** Sent with every compute call: server metadata and tags as Nodepool's driver sees them. */
export const COMPUTE_MICROVERSION = 'compute 2.79';

/** A flavor of the cloud. */
export interface LoopbackFlavor {
  name: string;
  id: string;
  vcpus: number;
  ram: number;
}

/** The flavors every full loopback cloud has; np.huge asks for more VCPUs than any host has. */
export const FLAVORS: ReadonlyArray<Omit<LoopbackFlavor, 'id'> & { disk: number }> = [
  { name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 },
  { name: 'm1.small', vcpus: 1, ram: 2048, disk: 20 },
  { name: 'm1.medium', vcpus: 2, ram: 4096, disk: 40 },
  { name: 'np.huge', vcpus: 4096, ram: 512, disk: 1 },
];

/** Compute quota values; -1 = unlimited. */
export interface ComputeQuota {
  instances?: number;
  cores?: number;
  ram?: number;
}

/** A server as {@link FullCloudAdmin.listAllServers} reports it. */
export interface ServerSummary {
  id: string;
  name: string;
  status: string;
  metadata: Record<string, string>;
}

/** Admin operations on one full loopback cloud. */
export class FullCloudAdmin {
  /** `ks`: a session of the cloud's admin (project admin). */
  constructor(private readonly ks: KeystoneSession) {}

  private async call<T>(type: string, p: string, method: string, json?: unknown, expect?: number[]): Promise<T> {
    const o: Parameters<KeystoneSession['request']>[1] = { method, headers: { 'OpenStack-API-Version': COMPUTE_MICROVERSION } };
    if (json !== undefined) o.json = json;
    if (expect) o.expect = expect;
    const res = await this.ks.request(`${this.ks.endpoint(type)}${p}`, o);
    return (res.body ? JSON.parse(res.body) : {}) as T;
  }

  /** The id of a project by name. */
  async projectId(name: string): Promise<string> {
    const r = await this.call<{ projects: Array<{ id: string }> }>('identity', `/projects?name=${encodeURIComponent(name)}`, 'GET');
    const id = r.projects[0]?.id;
    if (!id) throw new Error(`no project named ${name}`);
    return id;
  }

  /** Sets the compute quota of a project. */
  async setComputeQuota(project: string, q: ComputeQuota): Promise<void> {
    await this.call('compute', `/os-quota-sets/${await this.projectId(project)}`, 'PUT', { quota_set: q });
  }

  /** Every server in every project. */
  async listAllServers(): Promise<ServerSummary[]> {
    const r = await this.call<{ servers: ServerSummary[] }>('compute', '/servers/detail?all_tenants=1', 'GET');
    return r.servers.map((s) => ({ id: s.id, name: s.name, status: s.status, metadata: s.metadata ?? {} }));
  }

  /** Deletes every server in every project and waits (bounded) until none is left. */
  async deleteAllServers(timeoutMs = 120_000): Promise<void> {
    for (const s of await this.listAllServers()) {
      await this.call('compute', `/servers/${s.id}`, 'DELETE', undefined, [204, 404]);
    }
    await waitFor(async () => (await this.listAllServers()).length === 0, { timeoutMs, what: 'every server to be deleted', intervalMs: 250 });
  }

  /** Flavors, the shared `private` and external `public` networks with router1, the tiny image, lifted quotas. */
  async createResources(imageFile: string): Promise<{ flavors: LoopbackFlavor[]; network: { name: string; id: string }; image: { id: string; name: string } }> {
    const [flavors, network, image] = await Promise.all([
      this.createFlavors(), this.createNetworks(), this.uploadImage('loopback-tiny', imageFile), this.liftQuotas(),
    ]);
    return { flavors, network, image };
  }

  private async createFlavors(): Promise<LoopbackFlavor[]> {
    const out: LoopbackFlavor[] = [];
    for (const f of FLAVORS) {
      const r = await this.call<{ flavor: { id: string } }>('compute', '/flavors', 'POST', { flavor: f });
      out.push({ name: f.name, id: r.flavor.id, vcpus: f.vcpus, ram: f.ram });
    }
    return out;
  }

  private async createNetworks(): Promise<{ name: string; id: string }> {
    const net = async (body: Record<string, unknown>): Promise<string> =>
      (await this.call<{ network: { id: string } }>('network', '/v2.0/networks', 'POST', { network: body })).network.id;
    const subnet = async (body: Record<string, unknown>): Promise<string> =>
      (await this.call<{ subnet: { id: string } }>('network', '/v2.0/subnets', 'POST', { subnet: { ip_version: 4, ...body } })).subnet.id;
    const privateId = await net({ name: 'private', shared: true, 'provider:network_type': 'flat', 'provider:physical_network': 'private' });
    const privateSubnet = await subnet({ name: 'private-subnet', network_id: privateId, cidr: '10.1.0.0/24', gateway_ip: '10.1.0.1', enable_dhcp: true });
    const publicId = await net({ name: 'public', 'router:external': true, 'provider:network_type': 'flat', 'provider:physical_network': 'public' });
    await subnet({ name: 'public-subnet', network_id: publicId, cidr: '172.24.4.0/24', gateway_ip: '172.24.4.1', enable_dhcp: false });
    const router = await this.call<{ router: { id: string } }>('network', '/v2.0/routers', 'POST',
      { router: { name: 'router1', external_gateway_info: { network_id: publicId } } });
    await this.call('network', `/v2.0/routers/${router.router.id}/add_router_interface`, 'PUT', { subnet_id: privateSubnet });
    return { name: 'private', id: privateId };
  }

  private async uploadImage(name: string, file: string): Promise<{ id: string; name: string }> {
    const img = await this.call<{ id: string }>('image', '/v2/images', 'POST',
      { name, disk_format: 'qcow2', container_format: 'bare', visibility: 'public' });
    // Binary body: fetch, not the session's string-bodied request.
    const res = await fetch(`${this.ks.endpoint('image')}/v2/images/${img.id}/file`, {
      method: 'PUT', headers: { 'Content-Type': 'application/octet-stream', 'X-Auth-Token': await this.ks.token() }, body: await readFile(file),
    });
    if (res.status !== 204) throw new Error(`uploading image ${name}: ${res.status} ${await res.text()}`);
    await waitFor(async () => (await this.call<{ status: string }>('image', `/v2/images/${img.id}`, 'GET')).status === 'active',
      { timeoutMs: 30_000, what: `image ${name} active`, intervalMs: 200 });
    return { id: img.id, name };
  }

  /** Nova's default is 10 instances per project; tests burst beyond that. */
  private async liftQuotas(): Promise<void> {
    for (const project of ['admin', 'demo']) {
      const id = await this.projectId(project);
      await this.call('compute', `/os-quota-sets/${id}`, 'PUT', { quota_set: { instances: -1, cores: -1, ram: -1 } });
      await this.call('network', `/v2.0/quotas/${id}`, 'PUT', { quota: { port: -1, floatingip: -1, network: -1, subnet: -1, router: -1 } });
    }
  }
}
