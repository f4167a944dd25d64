/**
 * The Neutron (network v2.0) calls the openstack driver makes besides the network name
 * lookup in nova.ts: ports (for `port-cleanup-interval` and to find a server's port) and
 * floating IPs (`auto-floating-ip`: attach one to a server that has no public address, and
 * delete it with the server, as openstacksdk's `delete_ips` does for Nodepool).
 */
import { CloudError } from '../../errors.js';
import { JsonReader } from './json-reader.js';
import type { KeystoneSession, SessionRequestOptions } from './keystone.js';
import type { PortInfo } from './port-cleanup.js';

/** A floating IP: its id and address. */
export interface FloatingIp {
  id: string;
  address: string;
}

/** Neutron for one cloud and region; every listing is limited to the token's project. */
export class NeutronClient {
  private readonly base: string;

  /** Thrown: {@link CloudError} when the catalog has no network endpoint. */
  constructor(private readonly session: KeystoneSession) {
    this.base = `${session.endpoint('network').replace(/\/+$/, '').replace(/\/v2\.0$/, '')}/v2.0`;
  }

  /** Whether the session's catalog has a network service. */
  static available(session: KeystoneSession): boolean {
    try {
      session.endpoint('network');
      return true;
    } catch (err) {
      if (err instanceof CloudError) return false;
      throw err;
    }
  }

  private async call(method: string, path: string, o: { json?: unknown; expect?: number[] } = {}): Promise<JsonReader | undefined> {
    const req: SessionRequestOptions = { method, service: 'Neutron' };
    if (o.json !== undefined) req.json = o.json;
    if (o.expect) req.expect = o.expect;
    const res = await this.session.request(`${this.base}${path}`, req);
    return res.status === 204 ? undefined : JsonReader.parse(res);
  }

  private project(): string {
    const p = this.session.projectId;
    return p ? `project_id=${encodeURIComponent(p)}` : '';
  }

  /** The project's ports, optionally only those of one device (a server id) or status. */
  async listPorts(filter: { deviceId?: string; status?: string } = {}): Promise<PortInfo[]> {
    const q = [this.project()];
    if (filter.deviceId) q.push(`device_id=${encodeURIComponent(filter.deviceId)}`);
    if (filter.status) q.push(`status=${encodeURIComponent(filter.status)}`);
    const body = await this.call('GET', `/ports?${q.filter(Boolean).join('&')}`);
    return (body?.list('ports') ?? []).map((p) => ({ id: p.id('id'), status: p.optStr('status') ?? '', deviceOwner: p.optStr('device_owner') }));
  }

  /** Deletes a port; false when it was already gone. */
  async deletePort(id: string): Promise<boolean> {
    const res = await this.session.request(`${this.base}/ports/${encodeURIComponent(id)}`, { method: 'DELETE', service: 'Neutron', expect: [204, 404] });
    return res.status === 204;
  }

  /**
   * Ids of the external networks (`router:external`) the project sees, in Neutron's order
   * (the field is checked too: a network API that ignores the filter lists no external network).
   */
  async externalNetworks(): Promise<string[]> {
    const body = await this.call('GET', '/networks?router:external=true');
    return (body?.list('networks') ?? []).filter((n) => n.optBool('router:external') === true).map((n) => n.id('id'));
  }

  /** Creates a floating IP on `networkId`, bound to `portId` (none: allocated to the project only). */
  async createFloatingIp(networkId: string, portId?: string): Promise<FloatingIp> {
    const fip = portId === undefined ? { floating_network_id: networkId } : { floating_network_id: networkId, port_id: portId };
    const body = await this.call('POST', '/floatingips', { json: { floatingip: fip }, expect: [201] });
    const f = body?.obj('floatingip');
    if (!f) throw new CloudError('Neutron POST /floatingips answered no floating IP');
    return { id: f.id('id'), address: f.str('floating_ip_address') };
  }

  /** The project's floating IPs bound to a port. */
  async floatingIpsOfPort(portId: string): Promise<FloatingIp[]> {
    const q = [this.project(), `port_id=${encodeURIComponent(portId)}`].filter(Boolean).join('&');
    const body = await this.call('GET', `/floatingips?${q}`);
    return (body?.list('floatingips') ?? []).map((f) => ({ id: f.id('id'), address: f.str('floating_ip_address') }));
  }

  /** The project's floating IPs bound to no port (what `clean-floating-ips` deletes). */
  async unattachedFloatingIps(): Promise<FloatingIp[]> {
    const body = await this.call('GET', `/floatingips?${this.project()}`);
    return (body?.list('floatingips') ?? []).filter((f) => f.optStr('port_id') === null)
      .map((f) => ({ id: f.id('id'), address: f.str('floating_ip_address') }));
  }

  /** Deletes a floating IP; false when it was already gone. */
  async deleteFloatingIp(id: string): Promise<boolean> {
    const res = await this.session.request(`${this.base}/floatingips/${encodeURIComponent(id)}`, { method: 'DELETE', service: 'Neutron', expect: [204, 404] });
    return res.status === 204;
  }
}
