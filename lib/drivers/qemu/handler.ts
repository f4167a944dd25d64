/**
 * Request decisions and the launch for one request in one pool of a qemu provider: a VM
 * from an overlay of the label's newest ready upload (or of the upload a `building` record
 * already names in `image`), recorded on the node before it is made, ready once its forwarded
 * SSH port answers a key scan within `boot-timeout`.
 */
import { readFile } from 'node:fs/promises';
import { coerceError, LaunchError } from '../../errors.js';
import type { NodePatch, NodeRecord } from '../../store/models.js';
import { imagesAvailable } from '../core/label-images.js';
import { LaunchingHandler, type LaunchingHandlerContext } from '../core/launching-handler.js';
import type { CountedUpload } from '../../rollout/count-launch.js';
import type { QemuLabelConfig, QemuPoolConfig, QemuProviderConfig } from './config.js';
import { parseAuthorizedKeys } from './seed.js';
import { newVmId, type VmHost } from './vm-host.js';
import { waitForVmSsh } from './wait-ssh.js';

/** The guest's hostname: label and node id, DNS-safe. Pure. */
export function vmHostname(label: string, nodeId: string): string {
  return `${label}-${nodeId}`.toLowerCase().replace(/[^a-z0-9-]/g, '-').replace(/^-+|-+$/g, '').slice(0, 63) || `node-${nodeId}`;
}

/** The upload a label boots. */
export interface BootImage {
  /** The upload record's id (the node's `image`). */
  uploadId: string;
  /** The file's id in image-dir. */
  externalId: string;
  path: string;
  /** The upload the launch's outcome counts on (rollout); null: none (a validation boot). */
  countOn: CountedUpload | null;
}

/**
 * What {@link QemuHandler} uses of its provider (the provider implements it and creates the
 * handler, so the import runs from provider to handler only).
 */
export interface QemuHandlerDeps {
  readonly name: string;
  readonly config: QemuProviderConfig;
  /** Aborted when the provider stops: launches in flight end. */
  readonly signal: AbortSignal;
  readonly vms: VmHost;
  /** The accelerator guests run with. */
  accel(): Promise<'kvm' | 'tcg'>;
  /** What the label boots now (core's boot choice), if anything. */
  bootImage(label: QemuLabelConfig, key?: string): Promise<BootImage | undefined>;
  /** One upload's file, for a launch pinned to it. */
  pinnedImage(uploadId: string, label: QemuLabelConfig): Promise<BootImage>;
}

export class QemuHandler extends LaunchingHandler {
  constructor(private readonly provider: QemuHandlerDeps, private readonly poolConfig: QemuPoolConfig, hctx: LaunchingHandlerContext) {
    super(hctx);
  }

  private label(name: string): QemuLabelConfig | undefined {
    return this.poolConfig.labels.find((l) => l.name === name);
  }

  override imagesAvailable(): Promise<boolean> {
    return imagesAvailable(this.hctx.request.labels, { label: (n) => this.label(n), bootImage: (l) => this.provider.bootImage(l) });
  }

  override hasProviderQuota(labels: readonly string[]): Promise<boolean> {
    return Promise.resolve(labels.every((l) => this.label(l)) && labels.length <= this.poolConfig.maxServers);
  }

  /** What one VM of the label takes (its node's `resources`), for tenant-resource-limits. */
  override labelResources(name: string): Promise<Readonly<Record<string, number>> | undefined> {
    const l = this.label(name);
    return Promise.resolve(l ? { cores: l.cpus, ram: l.memory, instances: 1 } : undefined);
  }

  /** A ready node is handed out again only while its VM still runs. */
  override async checkReusableNode(node: NodeRecord): Promise<boolean> {
    return node.externalId !== null && (await this.provider.vms.runningPid(node.externalId)) !== null;
  }

  protected async launchNode(node: NodeRecord): Promise<NodePatch> {
    const p = this.provider;
    const label = this.label(node.labels[0] ?? '');
    if (!label) throw new LaunchError(`label ${JSON.stringify(node.labels[0])} is not served by pool ${this.poolConfig.name}`);
    // A record that arrives naming an upload boots exactly that one (validation); others core's choice for this node.
    const image = node.image ? await p.pinnedImage(node.image, label) : await p.bootImage(label, node.id);
    if (!image) throw new LaunchError(`no ready upload of diskimage ${label.diskimage} in provider ${p.name}`);
    const authorizedKeys = await this.authorizedKeys();
    const accel = await p.accel();
    const log = this.hctx.log.child({ node: node.id, label: label.name });
    const id = newVmId(node.id);
    const hostname = vmHostname(label.name, node.id);
    const checkpoint: NodePatch = {
      externalId: id, hostname, image: image.uploadId, username: p.config.username, connectionType: 'ssh',
      resources: { cores: label.cpus, ram: label.memory, instances: 1 },
    };
    // Recorded before the VM exists, so a crash leaves a VM the deleter or the leak cleanup finds.
    if (!(await this.hctx.store.updateNode(node.id, checkpoint))) throw new LaunchError(`node ${node.id} was deleted during its launch`);
    const started = Date.now();
    // From here on the launch boots the upload: its outcome counts on it (rollout), a settings problem before does not.
    this.bootsUpload(node, image.countOn);
    try {
      const vm = await p.vms.create(id, {
        nodeId: node.id, pool: this.poolConfig.name, label: label.name, image: image.externalId, imagePath: image.path,
        hostname, accel, memory: label.memory, cpus: label.cpus, authorizedKeys,
      }, p.signal);
      log.info('VM started', { vm: id, pid: vm.pid, port: vm.record.port, accel, image: image.externalId });
      const keys = await waitForVmSsh(p.vms, vm, { bootTimeout: p.config.bootTimeout, signal: p.signal, log });
      log.info('VM answers SSH', { vm: id, port: vm.record.port, bootMs: Date.now() - started });
      return {
        ...checkpoint, interfaceIp: '127.0.0.1', publicIpv4: '127.0.0.1', connectionPort: vm.record.port,
        hostKeys: this.poolConfig.hostKeyChecking ? keys : [],
      };
    } catch (err) {
      if (p.signal.aborted) throw new LaunchError(`launch abandoned: provider ${p.name} is stopping`, { cause: err });
      const tail = await p.vms.consoleTail(id, 1500);
      try {
        await p.vms.destroy(id);
        await this.hctx.store.updateNode(node.id, { externalId: null });
      } catch (cleanupErr) {
        log.warn('could not remove the failed VM; leaving it to the deleter', { vm: id, error: coerceError(cleanupErr).message });
      }
      const e = coerceError(err);
      throw new LaunchError(tail ? `${e.message}\n--- console tail ---\n${tail.trim()}` : e.message, { cause: e });
    }
  }

  /** A launch failing while the provider stops was abandoned: its image is not to blame. */
  protected override launchAbandoned(): boolean {
    return this.provider.signal.aborted;
  }

  /** The keys of the provider's `authorized-keys` file (none when unset). Thrown: LaunchError. */
  private async authorizedKeys(): Promise<string[]> {
    const file = this.provider.config.authorizedKeys;
    if (file === undefined) return [];
    try {
      return parseAuthorizedKeys(await readFile(file, 'utf8'));
    } catch (err) {
      throw new LaunchError(`cannot read authorized-keys ${file}: ${coerceError(err).message}`, { cause: err });
    }
  }
}
