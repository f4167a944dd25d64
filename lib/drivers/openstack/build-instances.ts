/**
 * Build instances of an openstack provider (the build-instance capability,
 * contract/build-instance.ts): a Nova server booted from a Glance image (`base-image`, by id
 * or by name), its login key given by cloud-init user data, tagged in its metadata as a build
 * instance of this builder. Its snapshot is Nova's `createImage` of the stopped server, which
 * the builder streams down from Glance (checked against Glance's hashes, converted when the
 * diskimage wants another format) and then deletes: the cloud's snapshot is a by-product,
 * and the build is uploaded like any other (docs/snapshot-builds.md).
 */
import { escapeControlChars } from '../../outside-text.js';
import { rename, rm } from 'node:fs/promises';
import { CloudError, coerceError, LaunchError } from '../../errors.js';
import { convertArgs } from '../../images/formats.js';
import { pollUntil } from '../../lifecycle.js';
import type { Logger } from '../../log.js';
import { runCommand } from '../../run-command.js';
import { keyscan } from '../../ssh/keyscan.js';
import type { BuildInstance, BuildInstances, BuildInstanceSpec, SnapshotProgress } from '../contract/build-instance.js';
import type { OpenStackAccess } from './access.js';
import type { OpenStackProviderConfig } from './config.js';
import { chooseFlavor, describeWish } from './flavors.js';
import { NovaClient, type NovaServer } from './nova.js';

/** Server (and snapshot image) metadata: the build's image id, and the builder that made it. */
export const BUILD_INSTANCE_KEY = 'nodepool_build_instance';
export const BUILD_BUILDER_KEY = 'nodepool_builder_id';
/** On a snapshot image: the server it was made of. */
export const BUILD_SNAPSHOT_KEY = 'nodepool_build_snapshot_of';

/** The cloud-init user data that gives the login user the build's key. Pure. */
export function buildUserData(authorizedKey: string): string {
  return `#cloud-config\nssh_authorized_keys:\n  - ${JSON.stringify(authorizedKey)}\n`;
}

/** Options of {@link OpenStackBuildInstances} (tests shorten the bounds). */
export interface OpenStackBuildInstancesOptions {
  /** Between status polls (default 2 s). */
  pollMs?: number;
  /** How long a snapshot may take to become an active image (default the provider's image-upload-timeout). */
  snapshotTimeoutMs?: number;
  /** How long a deleted server may take to disappear (default 300 s). */
  deleteTimeoutMs?: number;
  qemuImg?: string;
  keyscanCommand?: string;
}

export class OpenStackBuildInstances implements BuildInstances {
  private novaClient: NovaClient | undefined;
  private readonly pollMs: number;

  constructor(
    private readonly config: OpenStackProviderConfig,
    private readonly access: OpenStackAccess,
    private readonly log: Logger,
    private readonly opts: OpenStackBuildInstancesOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? 2000;
  }

  private nova(): NovaClient {
    this.novaClient ??= new NovaClient(this.access.session, { log: this.log, rate: this.config.rate });
    return this.novaClient;
  }

  /** The base image's Glance id: an image with that id, else the one active image of that name. */
  private async baseImageId(base: string): Promise<string> {
    const glance = this.access.glance;
    if (/^[0-9a-f-]{36}$/i.test(base)) {
      const byId = await glance.getImage(base);
      if (byId) return byId.id;
    }
    const named = (await glance.listImages({ name: base })).filter((i) => i.status === 'active');
    if (named.length === 1) return (named[0] as { id: string }).id;
    throw new LaunchError(named.length === 0
      ? `base-image ${JSON.stringify(base)}: no active image with that name or id in cloud ${this.config.cloud}`
      : `base-image ${JSON.stringify(base)}: ${named.length} active images have that name in cloud ${this.config.cloud}; give the id`);
  }

  async boot(spec: BuildInstanceSpec, signal: AbortSignal): Promise<BuildInstance> {
    const nova = this.nova();
    const imageId = await this.baseImageId(spec.baseImage);
    const wish = { minRam: spec.flavor === undefined ? (spec.minRam ?? 1024) : spec.minRam, flavorName: spec.flavor };
    const flavor = chooseFlavor(await nova.listFlavors(), wish);
    if (!flavor) throw new LaunchError(`no flavor in cloud ${this.config.cloud} matches ${describeWish(wish)} (snapshot build ${spec.buildId})`);
    const networks = this.config.pools[0]?.networks ?? [];
    const networkIds = await Promise.all(networks.map((n) => nova.networkId(n)));
    const id = await nova.createServer({
      name: `build-${spec.buildId}`, imageId, flavorId: flavor.id, networkIds,
      metadata: { [BUILD_INSTANCE_KEY]: spec.buildId, [BUILD_BUILDER_KEY]: spec.builderId },
      userdata: buildUserData(spec.authorizedKey),
    });
    this.log.info('build instance created', { server: id, image: imageId, flavor: flavor.name });
    try {
      const deadline = Date.now() + this.config.bootTimeout * 1000;
      const server = await this.waitStatus(id, 'ACTIVE', this.config.bootTimeout * 1000, signal);
      const ip = server.addresses.interfaceIp;
      if (!ip) throw new LaunchError(`build instance ${id} is ACTIVE but has no IP address`);
      const hostKeys = await keyscan(ip, 22, {
        timeoutMs: Math.max(1000, deadline - Date.now()), signal,
        ...(this.opts.keyscanCommand ? { command: this.opts.keyscanCommand } : {}),
      }).catch((err: unknown) => {
        if (signal.aborted) throw err;
        throw new LaunchError(`build instance ${id} at ${ip} does not answer SSH: ${coerceError(err).message}`, { cause: err });
      });
      // The config requires snapshot.username on openstack (cloud-init's default user varies by image).
      return { id, host: ip, port: 22, hostKeys, username: 'root' };
    } catch (err) {
      const e = coerceError(err);
      const tail = signal.aborted ? '' : await nova.consoleOutput(id, 30).catch(() => '');
      await this.remove(id);
      if (signal.aborted) throw e;
      // The guest's console is text from outside: its last 1,500 characters, control characters escaped.
      const shown = tail.trim().slice(-1500).split('\n').map(escapeControlChars).join('\n');
      throw new LaunchError(shown ? `${e.message}\n--- console tail ---\n${shown}` : e.message, { cause: e });
    }
  }

  /** Polls the server until it has `status`; ERROR, or a server gone, fails at once. */
  private async waitStatus(id: string, status: string, timeoutMs: number, signal: AbortSignal): Promise<NovaServer> {
    let last = 'unknown';
    const got = await pollUntil(async () => {
      const s = await this.nova().getServer(id, signal);
      if (!s) throw new LaunchError(`build instance ${id} disappeared`);
      if (s.status === 'ERROR') throw new LaunchError(`build instance ${id} went to ERROR${s.fault ? `: ${s.fault}` : ''}`);
      last = s.status;
      return s.status === status ? s : undefined;
    }, { timeoutMs, intervalMs: this.pollMs, signal });
    if (got) return got;
    throw new LaunchError(`build instance ${id} is still ${last}, not ${status}, after ${Math.round(timeoutMs / 1000)} s`);
  }

  async stop(id: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    const nova = this.nova();
    const s = await nova.getServer(id, signal);
    if (!s) throw new LaunchError(`build instance ${id} disappeared`);
    if (s.status !== 'SHUTOFF') await nova.stopServer(id);
    await this.waitStatus(id, 'SHUTOFF', timeoutMs, signal);
  }

  async snapshot(id: string, dest: string, format: string, opts: { signal: AbortSignal; onProgress?: SnapshotProgress }): Promise<void> {
    const glance = this.access.glance;
    const imageId = await this.nova().createImage(id, `build-snapshot-${id}`, { [BUILD_SNAPSHOT_KEY]: id });
    const fetched = `${dest}.download`;
    try {
      const timeoutMs = this.opts.snapshotTimeoutMs ?? this.config.imageUploadTimeout * 1000;
      let image;
      try {
        ({ image } = await glance.waitActive(imageId, opts.signal, timeoutMs));
      } catch (err) {
        if (opts.signal.aborted) throw err;
        throw new LaunchError(`Nova's snapshot of build instance ${id} (image ${imageId}) did not become a usable image: ${coerceError(err).message}`, { cause: err });
      }
      await glance.downloadImage(imageId, fetched, { signal: opts.signal, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
      const from = image.diskFormat ?? 'raw';
      if (from === format) {
        await rename(fetched, dest);
        return;
      }
      const r = await runCommand([this.opts.qemuImg ?? 'qemu-img', ...convertArgs(fetched, from, dest, format)], { signal: opts.signal, processGroup: true, killGraceMs: 5000 });
      if (r.aborted) throw opts.signal.reason instanceof Error ? opts.signal.reason : new LaunchError('snapshot aborted');
      if (r.exitCode !== 0) {
        await rm(dest, { force: true });
        throw new LaunchError(`qemu-img convert of the snapshot of ${id} (${from} to ${format}) failed (exit ${r.exitCode ?? r.signal}): ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
      }
    } finally {
      await rm(fetched, { force: true });
      await glance.deleteImage(imageId).catch((err: unknown) => {
        this.log.warn('could not delete the snapshot image; deleted with the build instance', { image: imageId, error: coerceError(err).message });
      });
    }
  }

  /** Deletes the server, then any snapshot image of it still in Glance; waits until the server is gone. */
  async remove(id: string): Promise<void> {
    const nova = this.nova();
    await nova.deleteServer(id);
    for (const img of await this.access.glance.listImages({ properties: { [BUILD_SNAPSHOT_KEY]: id } })) {
      await this.access.glance.deleteImage(img.id);
    }
    const timeoutMs = this.opts.deleteTimeoutMs ?? 300_000;
    const gone = await pollUntil(async () => ((await nova.getServer(id)) === undefined ? true : undefined), { timeoutMs, intervalMs: this.pollMs });
    if (!gone) throw new CloudError(`build instance ${id} still exists ${Math.round(timeoutMs / 1000)} s after its delete`);
  }

  async leftovers(builderId: string): Promise<string[]> {
    return (await this.nova().listServers())
      .filter((s) => s.metadata[BUILD_BUILDER_KEY] === builderId && s.metadata[BUILD_INSTANCE_KEY] !== undefined)
      .map((s) => s.id);
  }
}
