/**
 * A plain Nova (compute v2.1) client on a {@link KeystoneSession}: servers (create, get,
 * list, delete, console), flavors, absolute limits, availability zones, and network
 * name → id through Neutron. Every call carries the compute microversion and waits its
 * turn under the provider's `rate` (seconds between calls). Address parsing is pure.
 */
import { CloudError } from '../../errors.js';
import { sleep } from '../../lifecycle.js';
import { silentLogger, type Logger } from '../../log.js';
import type { Flavor } from './flavors.js';
import type { HttpResponse, KeystoneSession } from './keystone.js';
import type { ComputeLimits } from './quota.js';

/** The compute microversion every call asks for (embedded flavors in servers: ≥ 2.47). */
export const COMPUTE_MICROVERSION = '2.79';

/** A node's addresses as consumers want them. */
export interface ServerAddresses {
  interfaceIp: string | null;
  publicIpv4: string | null;
  privateIpv4: string | null;
  publicIpv6: string | null;
}

/** A server as nodepool needs it. */
export interface NovaServer {
  id: string;
  name: string;
  /** ACTIVE, BUILD, ERROR, DELETED, … */
  status: string;
  metadata: Record<string, string>;
  addresses: ServerAddresses;
  az: string | null;
  /** The fault message of an ERROR server. */
  fault: string | null;
  /** The embedded flavor (microversion ≥ 2.47). */
  flavor: { name: string; vcpus: number; ram: number } | null;
}

/** What to boot. */
export interface CreateServerSpec {
  name: string;
  imageId: string;
  flavorId: string;
  networkIds: readonly string[];
  metadata: Record<string, string>;
  keyName?: string | undefined;
  availabilityZone?: string | undefined;
  securityGroups?: readonly string[] | undefined;
  /** Plain text; sent base64-encoded. */
  userdata?: string | undefined;
  configDrive?: boolean | undefined;
  /** Boot from a new volume of this many GiB made from the image (deleted with the server). */
  volumeSize?: number | undefined;
}

/** Options of {@link NovaClient}. */
export interface NovaClientOptions {
  log?: Logger;
  /** Seconds between calls (the provider's `rate`); 0 = no throttle. */
  rate?: number;
}

type Json = Record<string, unknown>;

const PRIVATE_V4 = [/^10\./, /^172\.(1[6-9]|2\d|3[01])\./, /^192\.168\./, /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./, /^127\./, /^169\.254\./];

/** Whether an IPv4 address is in a private (RFC 1918, CGNAT, loopback, link-local) range. Pure. */
export function isPrivateIpv4(addr: string): boolean {
  return PRIVATE_V4.some((re) => re.test(addr));
}

/**
 * A server's addresses from Nova's `addresses` map: public v4 = a floating address or a
 * fixed one outside private ranges; private v4 = a fixed private one; public v6 = a global
 * v6 one. The interface address is public v4, else private v4, else public v6. Pure.
 */
export function serverAddresses(addresses: unknown, accessIPv4?: unknown, accessIPv6?: unknown): ServerAddresses {
  let publicIpv4: string | null = typeof accessIPv4 === 'string' && accessIPv4 ? accessIPv4 : null;
  let privateIpv4: string | null = null;
  let publicIpv6: string | null = typeof accessIPv6 === 'string' && accessIPv6 ? accessIPv6 : null;
  const nets = typeof addresses === 'object' && addresses !== null ? Object.values(addresses as Json) : [];
  for (const list of nets) {
    if (!Array.isArray(list)) continue;
    for (const a of list as Json[]) {
      const addr = typeof a.addr === 'string' ? a.addr : undefined;
      if (!addr) continue;
      const floating = a['OS-EXT-IPS:type'] === 'floating';
      if (a.version === 6 || addr.includes(':')) {
        if (!/^f[cde]/i.test(addr)) publicIpv6 ??= addr;
      } else if (floating || !isPrivateIpv4(addr)) publicIpv4 ??= addr;
      else privateIpv4 ??= addr;
    }
  }
  return { interfaceIp: publicIpv4 ?? privateIpv4 ?? publicIpv6, publicIpv4, privateIpv4, publicIpv6 };
}

/** A Nova server body → {@link NovaServer}. Pure. */
export function toNovaServer(raw: Json): NovaServer {
  const meta: Record<string, string> = {};
  if (typeof raw.metadata === 'object' && raw.metadata !== null) {
    for (const [k, v] of Object.entries(raw.metadata as Json)) if (typeof v === 'string') meta[k] = v;
  }
  const fault = raw.fault as Json | undefined;
  const flavor = raw.flavor as Json | undefined;
  const az = raw['OS-EXT-AZ:availability_zone'];
  return {
    id: String(raw.id),
    name: typeof raw.name === 'string' ? raw.name : '',
    status: typeof raw.status === 'string' ? raw.status : 'UNKNOWN',
    metadata: meta,
    addresses: serverAddresses(raw.addresses, raw.accessIPv4, raw.accessIPv6),
    az: typeof az === 'string' && az ? az : null,
    fault: fault && typeof fault.message === 'string' ? fault.message : null,
    flavor: flavor && typeof flavor.vcpus === 'number' && typeof flavor.ram === 'number'
      ? { name: typeof flavor.original_name === 'string' ? flavor.original_name : '', vcpus: flavor.vcpus, ram: flavor.ram }
      : null,
  };
}

/** The request body of `POST /servers`. Pure. */
export function createServerBody(s: CreateServerSpec): Json {
  const server: Json = {
    name: s.name,
    flavorRef: s.flavorId,
    networks: s.networkIds.length ? s.networkIds.map((uuid) => ({ uuid })) : 'auto',
    metadata: s.metadata,
  };
  if (s.volumeSize !== undefined) {
    server.imageRef = '';
    server.block_device_mapping_v2 = [{
      boot_index: 0, uuid: s.imageId, source_type: 'image', destination_type: 'volume', volume_size: s.volumeSize, delete_on_termination: true,
    }];
  } else server.imageRef = s.imageId;
  if (s.keyName !== undefined) server.key_name = s.keyName;
  if (s.availabilityZone !== undefined) server.availability_zone = s.availabilityZone;
  if (s.securityGroups?.length) server.security_groups = s.securityGroups.map((name) => ({ name }));
  if (s.userdata !== undefined) server.user_data = Buffer.from(s.userdata, 'utf8').toString('base64');
  if (s.configDrive !== undefined) server.config_drive = s.configDrive;
  return { server };
}

function parse(res: HttpResponse, what: string): Json {
  try {
    return JSON.parse(res.body) as Json;
  } catch (err) {
    throw new CloudError(`${what}: answer ${res.status} is not JSON`, { cause: err, status: res.status });
  }
}

/** Nova (and the Neutron network lookup) for one cloud and region. */
export class NovaClient {
  readonly computeUrl: string;
  private readonly log: Logger;
  private readonly rateMs: number;
  private nextSlot = 0;

  /** Thrown: {@link CloudError} when the catalog has no compute endpoint. */
  constructor(private readonly session: KeystoneSession, opts: NovaClientOptions = {}) {
    this.computeUrl = session.endpoint('compute');
    this.log = (opts.log ?? silentLogger()).child({ component: 'nova', cloud: session.creds.cloudName });
    this.rateMs = Math.round((opts.rate ?? 0) * 1000);
  }

  /** The project the token is scoped to. */
  get projectId(): string | undefined {
    return this.session.projectId;
  }

  private async call(method: string, path: string, o: { json?: unknown; expect?: number[]; signal?: AbortSignal | undefined } = {}): Promise<HttpResponse> {
    if (this.rateMs > 0) {
      const now = Date.now();
      const wait = Math.max(0, this.nextSlot - now);
      this.nextSlot = Math.max(now, this.nextSlot) + this.rateMs;
      if (wait) await sleep(wait, o.signal);
    }
    const headers = { 'OpenStack-API-Version': `compute ${COMPUTE_MICROVERSION}`, 'X-OpenStack-Nova-API-Version': COMPUTE_MICROVERSION };
    const req: Parameters<KeystoneSession['request']>[1] = { method, headers };
    if (o.json !== undefined) req.json = o.json;
    if (o.expect) req.expect = o.expect;
    if (o.signal) req.signal = o.signal;
    return this.session.request(path.startsWith('http') ? path : `${this.computeUrl}${path}`, req);
  }

  /**
   * Boots a server and returns its id (Nova answers 202 before it is built). No abort
   * signal: an abort between Nova's commit and our reading the id would leak the server.
   * Thrown: {@link CloudError} with Nova's status and message (403 for quota).
   */
  async createServer(spec: CreateServerSpec): Promise<string> {
    const res = await this.call('POST', '/servers', { json: createServerBody(spec) });
    const server = parse(res, 'POST /servers').server as Json | undefined;
    if (!server || typeof server.id !== 'string') throw new CloudError(`POST /servers answered ${res.status} without a server id`, { status: res.status });
    this.log.info('server created', { id: server.id, name: spec.name });
    return server.id;
  }

  /** The server, or undefined when Nova does not know it (any more). */
  async getServer(id: string, signal?: AbortSignal): Promise<NovaServer | undefined> {
    const res = await this.call('GET', `/servers/${encodeURIComponent(id)}`, { expect: [200, 404], signal });
    if (res.status === 404) return undefined;
    return toNovaServer(parse(res, `GET /servers/${id}`).server as Json);
  }

  /** Every server of the project (detail) but those already DELETED, following Nova's `next` links. */
  async listServers(): Promise<NovaServer[]> {
    const out: NovaServer[] = [];
    let url: string | undefined = `${this.computeUrl}/servers/detail`;
    for (let page = 0; url && page < 1000; page++) {
      const body = parse(await this.call('GET', url), 'GET /servers/detail');
      out.push(...((body.servers as Json[] | undefined) ?? []).map(toNovaServer).filter((s) => s.status !== 'DELETED'));
      const next = ((body.servers_links as Json[] | undefined) ?? []).find((l) => l.rel === 'next');
      url = typeof next?.href === 'string' ? next.href : undefined;
    }
    return out;
  }

  /** Deletes a server; false when it was already gone. */
  async deleteServer(id: string): Promise<boolean> {
    const res = await this.call('DELETE', `/servers/${encodeURIComponent(id)}`, { expect: [204, 202, 404] });
    this.log.info(res.status === 404 ? 'server already gone' : 'server delete requested', { id });
    return res.status !== 404;
  }

  /** The last `lines` of the server's console log ('' when Nova has none). */
  async consoleOutput(id: string, lines = 100): Promise<string> {
    const res = await this.call('POST', `/servers/${encodeURIComponent(id)}/action`, { json: { 'os-getConsoleOutput': { length: lines } } });
    const out = parse(res, 'os-getConsoleOutput').output;
    return typeof out === 'string' ? out : '';
  }

  /** Every flavor visible to the project. */
  async listFlavors(): Promise<Flavor[]> {
    const body = parse(await this.call('GET', '/flavors/detail'), 'GET /flavors/detail');
    return ((body.flavors as Json[] | undefined) ?? []).map((f) => ({
      id: String(f.id),
      name: String(f.name),
      vcpus: Number(f.vcpus),
      ram: Number(f.ram),
      disk: Number(f.disk ?? 0),
      disabled: f['OS-FLV-DISABLED:disabled'] === true,
    }));
  }

  /** The project's absolute compute limits and usage. */
  async getLimits(): Promise<ComputeLimits> {
    const body = parse(await this.call('GET', '/limits'), 'GET /limits');
    const abs = ((body.limits as Json | undefined)?.absolute ?? {}) as Json;
    const n = (k: string): number => (typeof abs[k] === 'number' ? abs[k] : -1);
    const used = (k: string): number => (typeof abs[k] === 'number' ? abs[k] : 0);
    return {
      maxTotalInstances: n('maxTotalInstances'),
      maxTotalCores: n('maxTotalCores'),
      maxTotalRAMSize: n('maxTotalRAMSize'),
      totalInstancesUsed: used('totalInstancesUsed'),
      totalCoresUsed: used('totalCoresUsed'),
      totalRAMUsed: used('totalRAMUsed'),
    };
  }

  /** Names of the availability zones that are available. */
  async listAvailabilityZones(): Promise<string[]> {
    const body = parse(await this.call('GET', '/os-availability-zone'), 'GET /os-availability-zone');
    return ((body.availabilityZoneInfo as Json[] | undefined) ?? [])
      .filter((z) => (z.zoneState as Json | undefined)?.available !== false)
      .map((z) => String(z.zoneName));
  }

  /**
   * The id of a network given by name or id (Neutron).
   * Thrown: {@link CloudError} when none or several networks match.
   */
  async networkId(nameOrId: string): Promise<string> {
    const base = this.session.endpoint('network').replace(/\/v2\.0$/, '');
    const byName = parse(await this.call('GET', `${base}/v2.0/networks?name=${encodeURIComponent(nameOrId)}`), 'GET /v2.0/networks');
    const nets = (byName.networks as Json[] | undefined) ?? [];
    if (nets.length === 1) return String(nets[0]?.id);
    if (nets.length > 1) throw new CloudError(`${nets.length} networks are named ${JSON.stringify(nameOrId)}: use the id`);
    const byId = await this.call('GET', `${base}/v2.0/networks/${encodeURIComponent(nameOrId)}`, { expect: [200, 404] });
    if (byId.status === 200) return String((parse(byId, 'GET /v2.0/networks/{id}').network as Json).id);
    throw new CloudError(`no network named or with id ${JSON.stringify(nameOrId)}`);
  }
}
