/**
 * A plain Nova (compute v2.1) client on a {@link KeystoneSession}: servers (create, get,
 * list, delete, console), flavors, absolute limits, availability zones, and network
 * name → id through Neutron. Every call carries the compute microversion and waits its
 * turn under the provider's `rate` (seconds between calls). Address parsing is pure.
 */
import { CloudError, QuotaExceededError } from '../../errors.js';
import { sleep } from '../../lifecycle.js';
import { silentLogger, type Logger } from '../../log.js';
import type { Flavor } from './flavors.js';
import type { HttpResponse } from './http-client.js';
import { JsonReader } from './json-reader.js';
import type { KeystoneSession, SessionRequestOptions } from './keystone.js';
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
  /** Nova's `hostId`: an opaque id of the compute host, per project (the node's `host_id`). */
  hostId: string | null;
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

/**
 * Whether Nova's words say the project is over quota: Nova gives no code of its own for it
 * (a create refused with 403 or 413, or an ERROR server's fault, carries only the message), so
 * the Nova client classifies here, where it parses the answer. Pure.
 */
export function isQuotaFault(message: string | null): boolean {
  return message !== null && /quota exceeded|exceeds? .*quota|over quota/i.test(message);
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
    hostId: typeof raw.hostId === 'string' && raw.hostId ? raw.hostId : null,
  };
}

/**
 * Reads a server object of a Nova answer, checking the type of every field used.
 * Thrown: {@link CloudError} naming the call and the field.
 */
export function readNovaServer(r: JsonReader): NovaServer {
  r.id('id');
  r.str('status');
  for (const k of ['name', 'OS-EXT-AZ:availability_zone', 'accessIPv4', 'accessIPv6', 'hostId']) r.optStr(k);
  r.optObj('metadata');
  const addresses = r.optObj('addresses');
  for (const net of Object.keys(addresses?.value ?? {})) addresses?.list(net).forEach((a) => a.optStr('addr'));
  r.optObj('fault')?.optStr('message');
  const flavor = r.optObj('flavor');
  if (flavor) {
    flavor.optNum('vcpus');
    flavor.optNum('ram');
    flavor.optStr('original_name');
  }
  return toNovaServer(r.value);
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

  private async call(method: string, path: string, o: { json?: unknown; expect?: number[]; signal?: AbortSignal | undefined; service?: string } = {}): Promise<HttpResponse> {
    if (this.rateMs > 0) {
      const now = Date.now();
      const wait = Math.max(0, this.nextSlot - now);
      this.nextSlot = Math.max(now, this.nextSlot) + this.rateMs;
      if (wait) await sleep(wait, o.signal);
    }
    const headers = { 'OpenStack-API-Version': `compute ${COMPUTE_MICROVERSION}`, 'X-OpenStack-Nova-API-Version': COMPUTE_MICROVERSION };
    const req: SessionRequestOptions = { method, headers, service: o.service ?? 'Nova' };
    if (o.json !== undefined) req.json = o.json;
    if (o.expect) req.expect = o.expect;
    if (o.signal) req.signal = o.signal;
    return this.session.request(path.startsWith('http') ? path : `${this.computeUrl}${path}`, req);
  }

  /**
   * Boots a server and returns its id (Nova answers 202 before it is built). No abort
   * signal: an abort between Nova's commit and our reading the id would leak the server.
   * Thrown: {@link QuotaExceededError} when Nova refuses it for quota ({@link isQuotaFault}),
   * else {@link CloudError} with Nova's status and message.
   */
  async createServer(spec: CreateServerSpec): Promise<string> {
    let res: HttpResponse;
    try {
      res = await this.call('POST', '/servers', { json: createServerBody(spec) });
    } catch (err) {
      if (err instanceof CloudError && isQuotaFault(err.message)) throw new QuotaExceededError(err.message, { cause: err });
      throw err;
    }
    const id = JsonReader.parse(res).obj('server').id('id');
    this.log.info('server created', { id, name: spec.name });
    return id;
  }

  /** The server, or undefined when Nova does not know it (any more). */
  async getServer(id: string, signal?: AbortSignal): Promise<NovaServer | undefined> {
    const res = await this.call('GET', `/servers/${encodeURIComponent(id)}`, { expect: [200, 404], signal });
    if (res.status === 404) return undefined;
    const r = JsonReader.parse(res).obj('server');
    const server = readNovaServer(r);
    if (server.id !== id) r.fail('id', JSON.stringify(id));
    return server;
  }

  /** Every server of the project (detail) but those already DELETED, following Nova's `next` links. */
  async listServers(): Promise<NovaServer[]> {
    const out: NovaServer[] = [];
    let url: string | undefined = `${this.computeUrl}/servers/detail`;
    for (let page = 0; url && page < 1000; page++) {
      const body = JsonReader.parse(await this.call('GET', url));
      out.push(...body.list('servers').map(readNovaServer).filter((s) => s.status !== 'DELETED'));
      const next = body.optList('servers_links').find((l) => l.optStr('rel') === 'next');
      url = next?.str('href');
    }
    return out;
  }

  /** Deletes a server; false when it was already gone. */
  async deleteServer(id: string): Promise<boolean> {
    const res = await this.call('DELETE', `/servers/${encodeURIComponent(id)}`, { expect: [204, 202, 404] });
    this.log.info(res.status === 404 ? 'server already gone' : 'server delete requested', { id });
    return res.status !== 404;
  }

  /**
   * Asks Nova to stop the server (`os-stop`: a clean shutdown, then power off). A server that
   * is already stopped (Nova answers 409) is fine. Thrown: {@link CloudError}.
   */
  async stopServer(id: string): Promise<void> {
    const res = await this.call('POST', `/servers/${encodeURIComponent(id)}/action`, { json: { 'os-stop': null }, expect: [202, 409] });
    this.log.info(res.status === 409 ? 'server not stopped: Nova says it is not running' : 'server stop requested', { id });
  }

  /**
   * Asks Nova for an image of the server (`createImage`); resolves with the new Glance
   * image's id (the answer's `image_id`, microversion ≥ 2.45). The image is made
   * asynchronously: it is `queued`, then `saving`, then `active`. No abort signal, as for
   * createServer: an image Nova made but we never heard of would leak.
   * Thrown: {@link CloudError}.
   */
  async createImage(id: string, name: string, metadata: Record<string, string>): Promise<string> {
    const res = await this.call('POST', `/servers/${encodeURIComponent(id)}/action`, { json: { createImage: { name, metadata } }, expect: [202] });
    const imageId = JsonReader.parse(res).id('image_id');
    this.log.info('server image requested', { id, imageId, name });
    return imageId;
  }

  /** The last `lines` of the server's console log ('' when Nova has none). */
  async consoleOutput(id: string, lines = 100): Promise<string> {
    const res = await this.call('POST', `/servers/${encodeURIComponent(id)}/action`, { json: { 'os-getConsoleOutput': { length: lines } } });
    return JsonReader.parse(res).optStr('output') ?? '';
  }

  /** Every flavor visible to the project. */
  async listFlavors(): Promise<Flavor[]> {
    const body = JsonReader.parse(await this.call('GET', '/flavors/detail'));
    return body.list('flavors').map((f) => ({
      id: f.id('id'),
      name: f.str('name'),
      vcpus: f.num('vcpus'),
      ram: f.num('ram'),
      disk: f.optNum('disk') ?? 0,
      disabled: f.optBool('OS-FLV-DISABLED:disabled') === true,
    }));
  }

  /** The project's absolute compute limits and usage. */
  async getLimits(): Promise<ComputeLimits> {
    const abs = JsonReader.parse(await this.call('GET', '/limits')).obj('limits').obj('absolute');
    const n = (k: string): number => abs.optNum(k) ?? -1;
    const used = (k: string): number => abs.optNum(k) ?? 0;
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
    const body = JsonReader.parse(await this.call('GET', '/os-availability-zone'));
    return body.list('availabilityZoneInfo')
      .filter((z) => z.optObj('zoneState')?.optBool('available') !== false)
      .map((z) => z.str('zoneName'));
  }

  /**
   * The id of a network given by name or id (Neutron).
   * Thrown: {@link CloudError} when none or several networks match.
   */
  async networkId(nameOrId: string): Promise<string> {
    const base = this.session.endpoint('network').replace(/\/v2\.0$/, '');
    const byName = JsonReader.parse(await this.call('GET', `${base}/v2.0/networks?name=${encodeURIComponent(nameOrId)}`, { service: 'Neutron' }));
    const nets = byName.list('networks').map((n) => n.id('id'));
    if (nets.length === 1) return nets[0] as string;
    if (nets.length > 1) throw new CloudError(`${nets.length} networks are named ${JSON.stringify(nameOrId)}: use the id`);
    const byId = await this.call('GET', `${base}/v2.0/networks/${encodeURIComponent(nameOrId)}`, { expect: [200, 404], service: 'Neutron' });
    if (byId.status === 200) return JsonReader.parse(byId).obj('network').id('id');
    throw new CloudError(`no network named or with id ${JSON.stringify(nameOrId)}`);
  }
}
