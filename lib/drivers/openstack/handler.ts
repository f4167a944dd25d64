/**
 * Request decisions and the launch for one request in one pool of an openstack provider:
 * images available, quota (pool limits and the cloud's, from quota.ts), one availability
 * zone per request, and the launch itself — boot, record the server id at once, wait for
 * ACTIVE, attach a floating IP when the pool asks for one (`auto-floating-ip`), check the host
 * (per label `host-key-checking`), and retry with a fresh server up to `launch-retries` attempts. A
 * `building` record that already names an upload in `image` boots exactly that upload's Glance
 * image (the validation gate), and its host-check failure carries the console log's tail.
 */
import { CloudError, coerceError, LaunchError, QuotaExceededError } from '../../errors.js';
import { pollUntil } from '../../lifecycle.js';
import { HostScanError, keyscan } from '../../ssh/keyscan.js';
import { waitForTcp } from '../../ssh/tcp-probe.js';
import type { Logger } from '../../log.js';
import type { NodePatch, NodeRecord, NodeResources } from '../../store/models.js';
import { imagesAvailable } from '../core/label-images.js';
import { LaunchingHandler, type LaunchingHandlerContext } from '../core/launching-handler.js';
import { formatHostname, type OpenStackLabelConfig, type OpenStackPoolConfig, type OpenStackProviderConfig } from './config.js';
import { dynamicProperties, requestAttrs } from './dynamic-properties.js';
import { chooseFlavor, flavorResources, type Flavor } from './flavors.js';
import { isQuotaFault, type NovaClient, type NovaServer } from './nova.js';
import type { BootImage } from './node-fields.js';
import type { FloatingIp } from './neutron.js';
import { fits, labelResources, poolLimits, sum, type CloudQuota, type Resources } from './quota.js';
import { serverMetadata } from './server-metadata.js';

/**
 * What {@link OpenStackHandler} uses of its provider (the provider implements it and creates
 * the handler, so the import runs from provider to handler only).
 */
export interface OpenStackHandlerDeps {
  readonly name: string;
  readonly config: OpenStackProviderConfig;
  /** Aborted when the provider stops: launches in flight end. */
  readonly signal: AbortSignal;
  /** The store's installation id, which new servers carry. */
  installation(): Promise<string>;
  nova(): Promise<NovaClient>;
  labelConfig(label: string): OpenStackLabelConfig | undefined;
  flavors(): Promise<Flavor[]>;
  flavorFor(label: OpenStackLabelConfig): Promise<Flavor>;
  networkIds(networks: readonly string[]): Promise<string[]>;
  /** What the label boots now (core's boot choice), if anything. */
  bootImage(label: OpenStackLabelConfig, key?: string): Promise<BootImage | undefined>;
  /** The Glance image of one upload, for a launch pinned to it. */
  pinnedImage(uploadId: string, label: OpenStackLabelConfig): Promise<BootImage>;
  cloudQuota(): Promise<CloudQuota>;
  invalidateQuota(): void;
  invalidateCaches(): void;
  attachFloatingIp(server: NovaServer): Promise<FloatingIp | undefined>;
  deleteServer(id: string): Promise<void>;
}

export class OpenStackHandler extends LaunchingHandler {
  /** The request's availability zone: undefined until chosen, null for "let Nova choose". */
  private chosenAz: string | null | undefined;

  constructor(private readonly provider: OpenStackHandlerDeps, private readonly poolConfig: OpenStackPoolConfig, hctx: LaunchingHandlerContext) {
    super(hctx);
  }

  private label(name: string): OpenStackLabelConfig | undefined {
    return this.poolConfig.labels.find((l) => l.name === name);
  }

  override imagesAvailable(): Promise<boolean> {
    return imagesAvailable(this.hctx.request.labels, { label: (n) => this.label(n), bootImage: (l) => this.provider.bootImage(l) });
  }

  /** The resources one node of each label takes; undefined when a label or its flavor is unknown. */
  private async demand(labels: readonly string[]): Promise<Resources[] | undefined> {
    const out: Resources[] = [];
    for (const name of labels) {
      const l = this.label(name);
      if (!l) return undefined;
      try {
        out.push(labelResources(flavorResources(await this.provider.flavorFor(l)), l));
      } catch (err) {
        this.hctx.log.warn('no flavor for label', { label: name, error: coerceError(err).message });
        return undefined;
      }
    }
    return out;
  }

  /** What one node of the label takes (its flavor, and a volume when it boots from one), for tenant-resource-limits. */
  override async labelResources(name: string): Promise<Readonly<Record<string, number>> | undefined> {
    const r = (await this.demand([name]))?.[0];
    return r && { ...r };
  }

  override async hasProviderQuota(labels: readonly string[]): Promise<boolean> {
    const demand = await this.demand(labels);
    if (!demand) return false;
    const needed = sum(demand);
    if (!fits(poolLimits(this.poolConfig), sum([]), needed)) return false;
    if (this.poolConfig.ignoreProviderQuota) return true;
    const q = await this.provider.cloudQuota();
    return fits(q.limits, q.unmanaged, needed);
  }

  override async hasRemainingQuota(label: string): Promise<boolean> {
    const demand = await this.demand([label]);
    if (!demand) return false;
    const needed = sum(demand);
    const nodes = await this.hctx.store.listNodes({ provider: this.provider.name });
    const flavors = await this.provider.flavors();
    const usage = (n: NodeRecord): Resources | undefined => {
      if (n.resources) return n.resources;
      const l = this.provider.labelConfig(n.labels[0] ?? '');
      const f = l && chooseFlavor(flavors, { minRam: l.minRam, flavorName: l.flavorName });
      return f && l ? labelResources(flavorResources(f), l) : undefined;
    };
    const used = (list: NodeRecord[]): NodeResources => sum(list.flatMap((n) => usage(n) ?? []));
    if (!fits(poolLimits(this.poolConfig), used(nodes.filter((n) => n.pool === this.poolConfig.name)), needed)) return false;
    if (this.poolConfig.ignoreProviderQuota) return true;
    const q = await this.provider.cloudQuota();
    return fits(q.limits, sum([q.unmanaged, used(nodes)]), needed);
  }

  override checkReusableNode(node: NodeRecord): Promise<boolean> {
    if (this.chosenAz === undefined || this.chosenAz === null) {
      // Adopt the reused node's zone, so the rest of the request lands next to it.
      if (node.az) this.chosenAz = node.az;
      return Promise.resolve(true);
    }
    return Promise.resolve(node.az === this.chosenAz);
  }

  override nodeMetadata(_label: string): NodePatch {
    if (this.chosenAz === undefined) {
      const zones = this.poolConfig.availabilityZones;
      this.chosenAz = zones.length ? (zones[Math.floor(Math.random() * zones.length)] as string) : null;
    }
    return { cloud: this.provider.config.cloud, region: this.provider.config.regionName ?? null, az: this.chosenAz };
  }

  protected async launchNode(node: NodeRecord): Promise<NodePatch> {
    const p = this.provider;
    const label = this.label(node.labels[0] ?? '');
    if (!label) throw new LaunchError(`label ${JSON.stringify(node.labels[0])} is not served by pool ${this.poolConfig.name}`);
    const attempts = p.config.launchRetries;
    const log = this.hctx.log.child({ node: node.id, label: label.name });
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(node, label, log.child({ attempt }));
      } catch (err) {
        const e = coerceError(err);
        if (p.signal.aborted) throw new LaunchError(`launch abandoned: provider ${p.name} is stopping`, { cause: e });
        if (e instanceof QuotaExceededError) {
          p.invalidateQuota();
          throw e;
        }
        if (attempt >= attempts) throw new LaunchError(attempts > 1 ? `launch failed after ${attempts} attempts: ${e.message}` : e.message, { cause: e });
        log.warn('launch attempt failed, retrying', { attempt, attempts, reason: e.message });
      }
    }
  }

  /** One attempt: a new server, or an error after the server it created (if any) is gone. */
  private async attempt(node: NodeRecord, label: OpenStackLabelConfig, log: Logger): Promise<NodePatch> {
    const p = this.provider;
    // A record that arrives naming an upload boots exactly that one (validation); others core's choice for this node.
    const image = node.image ? await p.pinnedImage(node.image, label) : await p.bootImage(label, node.id);
    if (!image) throw new LaunchError(`no image for label ${label.name} in provider ${p.name}`);
    const [nova, flavor, networkIds, installation] = await Promise.all([p.nova(), p.flavorFor(label), p.networkIds(label.networks), p.installation()]);
    const hostname = formatHostname(p.config.hostnameFormat, { label: label.name, provider: p.name, node: node.id, pool: this.poolConfig.name });
    const dynamic = dynamicProperties(label.dynamicInstanceProperties, requestAttrs(this.hctx.request));
    for (const s of dynamic.skipped) log.warn('dynamic-instance-properties: skipped a key that could not be formatted', { key: s.key, error: s.error });
    const metadata = serverMetadata({
      provider: p.name, pool: this.poolConfig.name, label: label.name, imageName: image.name, nodeId: node.id,
      instanceProperties: label.instanceProperties, dynamicProperties: dynamic.values, installation,
    });
    // From here the launch boots the upload: its outcome counts on it (rollout), Nova refusing the
    // create (an image it will not boot) included; a flavor or network lookup that failed above does not.
    this.bootsUpload(node, image.countOn);
    let id: string;
    try {
      id = await nova.createServer({
        name: hostname, imageId: image.imageId, flavorId: flavor.id, networkIds, metadata,
        keyName: label.keyName, availabilityZone: node.az ?? undefined, securityGroups: this.poolConfig.securityGroups,
        userdata: label.userdata, configDrive: image.configDrive, volumeSize: label.bootFromVolume ? label.volumeSize : undefined,
      });
    } catch (err) {
      // Over quota is a QuotaExceededError from the Nova client (nova.ts isQuotaFault): launchNode aborts the node.
      if (err instanceof CloudError && err.status === 400) p.invalidateCaches();
      throw err;
    }
    const resources: NodeResources = labelResources(flavorResources(flavor), label);
    const checkpoint: NodePatch = {
      externalId: id, hostname, image: image.ref, resources,
      username: image.username, connectionType: image.connectionType, connectionPort: image.connectionPort,
      pythonPath: image.pythonPath, shellType: image.shellType,
    };
    try {
      // Recorded before anything else can fail, so a crash leaves a server the deleter finds.
      if (!(await this.hctx.store.updateNode(node.id, checkpoint))) throw new LaunchError(`node ${node.id} was deleted during its launch`);
      const server = await this.waitActive(nova, id);
      const addr = { ...server.addresses };
      if (this.poolConfig.autoFloatingIp && !addr.publicIpv4 && addr.privateIpv4) {
        const fip = await p.attachFloatingIp(server);
        if (fip) Object.assign(addr, { publicIpv4: fip.address, interfaceIp: fip.address });
      }
      if (!addr.interfaceIp) throw new LaunchError(`server ${id} is ACTIVE but has no IP address`);
      const consoleTail = label.consoleLog || (typeof node.validatesUpload === 'string' && node.validatesUpload !== '');
      const hostKeys = label.hostKeyChecking ? await this.checkHost(nova, server, addr.interfaceIp, image, label, consoleTail, log) : [];
      log.info('server active', { externalId: id, ip: addr.interfaceIp, az: server.az });
      return { ...checkpoint, ...addr, az: server.az ?? node.az, hostKeys, hostId: server.hostId };
    } catch (err) {
      if (!p.signal.aborted) await this.discardServer(node, id, log);
      throw err;
    }
  }

  /** A launch failing while the provider stops was abandoned: its image is not to blame. */
  protected override launchAbandoned(): boolean {
    return this.provider.signal.aborted;
  }

  /** Polls until ACTIVE (bounded by `launch-timeout`); ERROR, a vanished server or the deadline throw. */
  private async waitActive(nova: NovaClient, id: string): Promise<NovaServer> {
    const p = this.provider;
    let status = 'unknown';
    const active = await pollUntil(async () => {
      const s = await nova.getServer(id, p.signal);
      if (!s) throw new LaunchError(`server ${id} vanished while building`);
      status = s.status;
      if (s.status === 'ACTIVE') return s;
      if (s.status === 'ERROR') {
        const msg = `server ${id} went to ERROR: ${s.fault ?? 'Nova gave no fault message'}`;
        throw isQuotaFault(s.fault) ? new QuotaExceededError(msg) : new LaunchError(msg);
      }
      return undefined;
    }, { timeoutMs: p.config.launchTimeout * 1000, intervalMs: (n) => 250 * 2 ** Math.min(n, 3), signal: p.signal });
    if (active) return active;
    throw new LaunchError(`server ${id} was not ACTIVE within launch-timeout ${p.config.launchTimeout} s (status ${status})`);
  }

  /**
   * Scans the node's SSH host keys (ssh, network_cli) or waits for its port to open (winrm)
   * within `boot-timeout`. On failure the console log is logged when the label asks for it, and
   * with `consoleTail` its tail goes into the error (a validation's reason).
   */
  private async checkHost(
    nova: NovaClient, server: NovaServer, ip: string, image: BootImage, label: OpenStackLabelConfig, consoleTail: boolean, log: Logger,
  ): Promise<string[]> {
    const p = this.provider;
    const opts = { timeoutMs: p.config.bootTimeout * 1000, signal: p.signal };
    try {
      if (image.connectionType === 'ssh' || image.connectionType === 'network_cli') return await keyscan(ip, image.connectionPort, opts);
      await waitForTcp(ip, image.connectionPort, opts);
      return [];
    } catch (err) {
      if (p.signal.aborted || !(err instanceof HostScanError)) throw err;
      let tail = '';
      if (label.consoleLog || consoleTail) {
        try {
          const output = await nova.consoleOutput(server.id);
          if (label.consoleLog) log.warn('console log of the unreachable server', { externalId: server.id, console: output });
          if (consoleTail && output.trim()) tail = `\n--- console tail ---\n${output.trim().slice(-1500)}`;
        } catch (consoleErr) {
          log.warn('could not read the console log', { externalId: server.id, error: coerceError(consoleErr).message });
        }
      }
      throw new LaunchError(`server ${server.id} failed its host check within boot-timeout ${p.config.bootTimeout} s: ${err.message}${tail}`, { cause: err });
    }
  }

  /** Removes a failed attempt's server; if that fails, hands it to the deleter as its own record. */
  private async discardServer(node: NodeRecord, id: string, log: Logger): Promise<void> {
    const store = this.hctx.store;
    try {
      await this.provider.deleteServer(id);
      log.info('failed server deleted', { externalId: id });
    } catch (err) {
      log.warn('could not delete the failed server; leaving it to the deleter', { externalId: id, error: coerceError(err).message });
      try {
        await store.createNode({
          state: 'deleting', provider: this.provider.name, pool: this.poolConfig.name, labels: node.labels, externalId: id, reason: 'failed launch attempt',
        });
      } catch (storeErr) {
        // The node record keeps the id then: its own delete removes the server.
        log.error('could not record the failed server for deletion', { externalId: id, error: coerceError(storeErr).message });
        return;
      }
    }
    try {
      await store.updateNode(node.id, { externalId: null, hostname: null });
    } catch (err) {
      log.warn('could not clear the failed server from the node', { externalId: id, error: coerceError(err).message });
    }
  }
}
