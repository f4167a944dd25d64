/**
 * One `driver: openstack` provider at run time: all cloud I/O (Nova through the Keystone
 * session of the driver's host access, shared with the provider's image service (access.ts), Glance for cloud images by name, Neutron for floating IPs and ports),
 * the short-lived caches (flavors, networks, image lookups, the quota snapshot), server
 * deletion (with its floating IPs), listing and leak cleanup; Neutron clean-up (floating IPs,
 * `port-cleanup-interval`) lives in network-cleanup.ts.
 * Request decisions and the launch live in handler.ts.
 */
import { CloudError, coerceError, LaunchError } from '../../errors.js';
import { KeptUnlessFailed, waitFor } from '../../lifecycle.js';
import type { Logger } from '../../log.js';
import type { NodeRecord, NodeRequestRecord } from '../../store/models.js';
import type { ExternalNode, Provider, ProviderContext, RequestHandler } from '../contract/driver.js';
import type { ImageService } from '../contract/image-service.js';
import { chooseBootUpload } from '../../rollout/boot-choice.js';
import { labelReady } from '../core/label-images.js';
import { pinnedUploadProblem } from '../../rollout/pinned-upload.js';
import type { OpenStackLabelConfig, OpenStackPoolConfig, OpenStackProviderConfig } from './config.js';
import { poolInfo } from './config.js';
import { chooseFlavor, describeWish, flavorResources, type Flavor } from './flavors.js';
import { OpenStackHandler, type OpenStackHandlerDeps } from './handler.js';
import { OpenStackImageService } from './glance-image-service.js';
import type { OpenStackAccess } from './access.js';
import { findLeakedServers } from './leaks.js';
import { NeutronClient, type FloatingIp } from './neutron.js';
import { cloudImageNodeFields, diskimageNodeFields, type BootImage, type TopDiskimageKeys } from './node-fields.js';
import { NovaClient, type NovaServer } from './nova.js';
import { NetworkCleanup } from './network-cleanup.js';
import { cloudLimits, unmanagedUsage, type CloudQuota } from './quota.js';
import { firstLabelConfig, poolNamed } from '../contract/common-config.js';

/** Tunables of {@link OpenStackProvider}. */
export interface OpenStackProviderOptions {
  /** How long the cloud quota snapshot (limits and foreign usage) is reused (default 5 s). */
  quotaCacheMs?: number;
  /** How long a cloud image lookup by name is reused (default 10 s). */
  imageCacheMs?: number;
  /** Bound of waiting for a deleted server to disappear (default 120 s). */
  deleteTimeoutMs?: number;
}

export class OpenStackProvider implements Provider, OpenStackHandlerDeps {
  readonly name: string;
  readonly log: Logger;
  /** Glance over the provider's host access (uploads, deletes, alien-image-list). */
  readonly images: ImageService;
  private readonly abort = new AbortController();
  private readonly opts: Required<OpenStackProviderOptions>;
  private state: 'created' | 'running' | 'stopped' = 'created';
  private readonly novaClient = new KeptUnlessFailed(async () =>
    new NovaClient((await this.access()).session, { log: this.log, rate: this.config.rate }));
  private readonly neutronClient = new KeptUnlessFailed(async () => {
    const { session } = await this.access();
    return NeutronClient.available(session) ? new NeutronClient(session) : null;
  });
  private readonly flavorList = new KeptUnlessFailed(async () => (await this.nova()).listFlavors());
  /** Neutron clean-up: a deleted server's floating IPs, DOWN ports, unattached floating IPs. */
  private readonly networkCleanup = new NetworkCleanup(this);
  private readonly networks = new Map<string, Promise<string>>();
  private readonly cloudImageIds = new Map<string, { at: number; id: string | undefined }>();
  private quota?: { at: number; value: Promise<CloudQuota> };
  private readonly installationId = new KeptUnlessFailed(() => this.ctx.store.installationId());

  constructor(readonly config: OpenStackProviderConfig, readonly ctx: ProviderContext<OpenStackAccess>, opts: OpenStackProviderOptions = {}) {
    this.name = config.name;
    this.log = ctx.log.child({ component: 'openstack', provider: config.name });
    this.opts = { quotaCacheMs: opts.quotaCacheMs ?? 5000, imageCacheMs: opts.imageCacheMs ?? 10_000, deleteTimeoutMs: opts.deleteTimeoutMs ?? 120_000 };
    const svc = async (): Promise<OpenStackImageService> => new OpenStackImageService(await this.access());
    this.images = {
      upload: async (req) => (await svc()).upload(req),
      delete: async (id) => (await svc()).delete(id),
      list: async (filter, signal) => (await svc()).list(filter, signal),
    };
  }

  /**
   * The store's installation id (made by the first server to ask): new servers carry it
   * (server-metadata.ts) and leak cleanup leaves servers carrying another one alone.
   */
  installation(): Promise<string> {
    return this.installationId.get();
  }

  /** The driver's host access (session, Glance); its owner closes it. Thrown: CloudError (credentials, Keystone). */
  access(): Promise<OpenStackAccess> {
    const get = this.ctx.hostAccess;
    if (!get) return Promise.reject(new CloudError(`provider ${this.name} was created without a host access, so its cloud is out of reach`));
    return get();
  }

  /** Aborted by stop(): launches in flight end. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  start(): Promise<void> {
    if (this.state === 'created') this.state = 'running';
    this.log.info('provider started', { cloud: this.config.cloud, region: this.config.regionName ?? null });
    return Promise.resolve();
  }

  stop(): Promise<void> {
    if (this.state !== 'stopped') {
      this.state = 'stopped';
      this.abort.abort(new CloudError(`provider ${this.name} is stopping`));
      this.log.info('provider stopped');
    }
    return Promise.resolve();
  }

  /** Nova through the provider's authenticated session (a failed attempt is not cached). */
  nova(): Promise<NovaClient> {
    return this.novaClient.get();
  }

  /** A pool of this provider. Thrown: Error for an unknown pool (a launcher bug). */
  pool(name: string): OpenStackPoolConfig {
    return poolNamed(this.config, name);
  }

  /** The label's config in the first pool that serves it. */
  labelConfig(label: string): OpenStackLabelConfig | undefined {
    return firstLabelConfig(this.config.pools, label);
  }

  /** The project's flavors (cached until a create answers 400). */
  flavors(): Promise<Flavor[]> {
    return this.flavorList.get();
  }

  /** Forgets cached flavors, networks and image lookups (after Nova refused a create). */
  invalidateCaches(): void {
    this.flavorList.clear();
    this.networks.clear();
    this.cloudImageIds.clear();
  }

  /** The flavor of a label. Thrown: {@link CloudError} when none matches. */
  async flavorFor(label: OpenStackLabelConfig): Promise<Flavor> {
    const wish = { minRam: label.minRam, flavorName: label.flavorName };
    const f = chooseFlavor(await this.flavors(), wish);
    if (!f) throw new CloudError(`no flavor in cloud ${this.config.cloud} matches ${describeWish(wish)} (label ${label.name})`);
    return f;
  }

  /** Neutron, or null when the cloud's catalog has no network service. */
  neutron(): Promise<NeutronClient | null> {
    return this.neutronClient.get();
  }

  /** Network ids of a label's `networks` (names or ids; the pool's when the label gives none). */
  async networkIds(networks: readonly string[]): Promise<string[]> {
    return Promise.all(networks.map((n) => {
      let id = this.networks.get(n);
      if (!id) {
        id = this.nova().then((nova) => nova.networkId(n));
        this.networks.set(n, id);
        const mine = id;
        id.catch(() => { if (this.networks.get(n) === mine) this.networks.delete(n); });
      }
      return id;
    }));
  }

  /**
   * What a label boots: core's choice of an upload of its diskimage (lib/rollout/boot-choice.ts: pins,
   * revocations, a canary's share of launches by `key`, the launch's node id; without a key, as
   * availability checks ask, the newest that may serve), or its cloud image; undefined when none.
   */
  async bootImage(label: OpenStackLabelConfig, key?: string): Promise<BootImage | undefined> {
    if (label.diskimage !== undefined) {
      const d = this.config.diskimages.find((x) => x.name === label.diskimage);
      if (!d) return undefined;
      const chosen = await chooseBootUpload(this.ctx, { provider: this.name, diskimage: d.name, ...(key !== undefined ? { key } : {}) });
      if (!chosen) return undefined;
      return {
        imageId: chosen.externalId, ref: chosen.upload.id, name: d.name, configDrive: d.configDrive, countOn: chosen.countOn,
        ...diskimageNodeFields(d, this.topDiskimage(d.name)),
      };
    }
    const ci = this.config.cloudImages.find((x) => x.name === label.cloudImage);
    if (!ci) return undefined;
    const imageId = ci.imageId ?? (await this.cloudImageId(ci.imageName ?? ci.name));
    if (imageId === undefined) return undefined;
    return { imageId, ref: ci.name, name: ci.name, configDrive: ci.configDrive, countOn: null, ...cloudImageNodeFields(ci) };
  }

  /**
   * The upload a node record names in `image` before its launch (a validation boot of exactly
   * that upload, issue 14 §2): this provider's upload of the label's diskimage, not failed or
   * being deleted, with a Glance image. Thrown: LaunchError naming what does not fit.
   */
  async pinnedImage(uploadId: string, label: OpenStackLabelConfig): Promise<BootImage> {
    const u = await this.ctx.store.getUpload(uploadId);
    const d = label.diskimage === undefined ? undefined : this.config.diskimages.find((x) => x.name === label.diskimage);
    const why = !d ? `cannot be booted as label ${label.name}, which boots no diskimage of provider ${this.name}`
      : pinnedUploadProblem(u, this.name, d.name);
    if (why !== undefined || !u?.externalId || !d) throw new LaunchError(`upload ${uploadId} ${why ?? 'is unusable'}`);
    return { imageId: u.externalId, ref: u.id, name: d.name, configDrive: d.configDrive, countOn: null, ...diskimageNodeFields(d, this.topDiskimage(d.name)) };
  }

  /**
   * The top-level diskimage of that name, for its `username`, `python-path`, `shell-type`
   * (read structurally: keys the top-level schema lacks read as absent, so Nodepool's defaults apply).
   */
  private topDiskimage(name: string): TopDiskimageKeys | undefined {
    const d: unknown = this.ctx.config.diskimages.find((x) => x.name === name);
    return d as TopDiskimageKeys | undefined;
  }

  /** The id of an active Glance image by name (cached briefly, also when absent). */
  private async cloudImageId(name: string): Promise<string | undefined> {
    const hit = this.cloudImageIds.get(name);
    if (hit && this.ctx.clock() - hit.at < this.opts.imageCacheMs) return hit.id;
    const { glance } = await this.access();
    const found = (await glance.listImages({ name })).find((i) => i.status === 'active')?.id;
    this.cloudImageIds.set(name, { at: this.ctx.clock(), id: found });
    return found;
  }

  labelReady(label: string): Promise<boolean> {
    return labelReady(label, { label: (n) => this.labelConfig(n), bootImage: (l) => this.bootImage(l) }, this.log);
  }

  /** The cloud's quota snapshot, reused for `quotaCacheMs`. */
  cloudQuota(): Promise<CloudQuota> {
    const now = this.ctx.clock();
    if (!this.quota || now - this.quota.at >= this.opts.quotaCacheMs) {
      const value = this.fetchQuota();
      const entry = { at: now, value };
      this.quota = entry;
      value.catch(() => { if (this.quota === entry) this.quota = undefined; });
    }
    return this.quota.value;
  }

  /** The cloud's limits from the quota snapshot (unlimited resources left out). */
  async resourceLimits(): Promise<Readonly<Record<string, number>>> {
    const { limits } = await this.cloudQuota();
    return Object.fromEntries(Object.entries(limits).filter(([, v]) => Number.isFinite(v)));
  }

  /** Drops the quota snapshot (after the cloud said "quota exceeded"). */
  invalidateQuota(): void {
    this.quota = undefined;
  }

  private async fetchQuota(): Promise<CloudQuota> {
    const nova = await this.nova();
    const [limits, servers] = await Promise.all([nova.getLimits(), nova.listServers()]);
    const nodes = await this.ctx.store.listNodes({ provider: this.name });
    const usage = servers.map((s) => ({ id: s.id, metadata: s.metadata, resources: s.flavor ? flavorResources(s.flavor) : null }));
    return { limits: cloudLimits(limits), unmanaged: unmanagedUsage(usage, this.name, nodes) };
  }

  async listNodes(): Promise<ExternalNode[]> {
    const servers = await (await this.nova()).listServers();
    return servers.filter((s) => s.metadata.nodepool_provider_name === this.name).map((s) => ({
      externalId: s.id, name: s.name, provider: this.name, nodeId: s.metadata.nodepool_node_id ?? null, status: s.status,
    }));
  }

  async cleanupNode(node: NodeRecord): Promise<void> {
    if (!node.externalId) return;
    await this.deleteServer(node.externalId);
  }

  /**
   * Gives a server with no public address a floating IP from the first external network
   * (`auto-floating-ip`, as openstacksdk's `auto_ip` does for Nodepool); undefined when the
   * cloud has no network service or no external network, or the server has no port.
   */
  async attachFloatingIp(server: NovaServer): Promise<FloatingIp | undefined> {
    const neutron = await this.neutron();
    if (!neutron) return undefined;
    const [net] = await neutron.externalNetworks();
    if (!net) return undefined;
    const [port] = await neutron.listPorts({ deviceId: server.id });
    if (!port) return undefined;
    const fip = await neutron.createFloatingIp(net, port.id);
    this.log.info('floating ip attached', { externalId: server.id, floatingIp: fip.address });
    return fip;
  }

  /** Deletes a server (its floating IPs first) and waits until Nova no longer knows it. Thrown: {@link CloudError}. */
  async deleteServer(id: string): Promise<void> {
    const nova = await this.nova();
    try {
      await this.networkCleanup.deleteFloatingIps(id);
    } catch (err) {
      // The server still goes: a network API that fails must not keep servers alive.
      this.log.warn('could not delete the floating ips of a server; deleting the server anyway', { externalId: id, error: coerceError(err).message });
    }
    if (!(await nova.deleteServer(id))) return;
    try {
      await waitFor(async () => {
        const s = await nova.getServer(id);
        return !s || s.status === 'DELETED';
      }, { timeoutMs: this.opts.deleteTimeoutMs, what: `server ${id} to be deleted`, intervalMs: 250 });
    } catch (err) {
      throw new CloudError(`server ${id} was not gone within ${this.opts.deleteTimeoutMs / 1000} s of its delete`, { cause: err });
    }
  }

  async cleanupLeakedResources(): Promise<void> {
    // A provider that only takes images launches nothing, so it has no servers to look for (and
    // its cloud may have no compute service at all); nodes left from a former pool still count.
    if (this.config.pools.length === 0 && (await this.ctx.store.listNodes({ provider: this.name })).length === 0) return;
    try {
      await this.networkCleanup.cleanupDownPorts(this.config.portCleanupInterval);
    } catch (err) {
      this.log.warn('port cleanup failed; trying again at the next pass', { error: coerceError(err).message });
    }
    if (this.config.cleanFloatingIps) {
      try {
        await this.networkCleanup.cleanupFloatingIps();
      } catch (err) {
        this.log.warn('floating ip cleanup failed; trying again at the next pass', { error: coerceError(err).message });
      }
    }
    // Servers first, records second: a server listed was created after its record, so the record is seen.
    const servers = await (await this.nova()).listServers();
    // Corrupt records cover their servers too, and another installation's servers are its own (leaks.ts LeakScope).
    const [nodes, corrupt, installation] = await Promise.all([
      this.ctx.store.listNodes({ provider: this.name }), this.ctx.store.listCorruptNodes(), this.installation(),
    ]);
    for (const leak of findLeakedServers(servers, this.name, nodes, { corrupt, installation })) {
      const rec = await this.ctx.store.createNode({
        state: 'deleting', provider: this.name, pool: leak.pool, labels: leak.labels, externalId: leak.externalId,
        hostname: leak.name, reason: 'leaked', cloud: this.config.cloud, region: this.config.regionName ?? null,
      });
      this.log.warn('leaked server: marked for deletion', { externalId: leak.externalId, server: leak.name, formerNode: leak.nodeId, node: rec.id });
      this.ctx.onLeak?.('server', 1);
    }
  }

  nodeDeleted(_node: NodeRecord): Promise<void> {
    return Promise.resolve();
  }

  getRequestHandler(pool: string, request: NodeRequestRecord): RequestHandler {
    const pc = this.pool(pool);
    return new OpenStackHandler(this, pc, {
      store: this.ctx.store, log: this.log.child({ pool, request: request.id }), pool: poolInfo(pc), request, clock: this.ctx.clock,
    });
  }
}
