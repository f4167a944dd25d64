/**
 * One `driver: qemu` provider at run time: its uploads in `image-dir` (image-store.ts), its
 * VMs in `state-dir` (vm-host.ts), the accelerator (accel.ts), listing, deletion and leak
 * cleanup. VMs are found from their files, never from memory, so a restarted launcher
 * re-adopts the VMs of the one before it. Request decisions and the launch are in handler.ts.
 */
import { mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { CloudError, coerceError, LaunchError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { NodeRecord, NodeRequestRecord } from '../../store/models.js';
import type { NodeClaim } from '../../store/store.js';
import type { ExternalNode, Provider, ProviderContext, RequestHandler } from '../contract/driver.js';
import { resolveAccel } from './accel.js';
import type { QemuLabelConfig, QemuPoolConfig, QemuProviderConfig } from './config.js';
import { qemuPoolInfo } from './config.js';
import { QemuHandler, type BootImage, type QemuHandlerDeps } from './handler.js';
import { QemuImageService, validImageId } from './image-store.js';
import { VmHost, type FoundVm } from './vm-host.js';
import { firstLabelConfig, poolNamed } from '../contract/common-config.js';
import { chooseBootUpload } from '../../rollout/boot-choice.js';
import { labelReady } from '../core/label-images.js';
import { pinnedUploadProblem } from '../../rollout/pinned-upload.js';
import { KeptUnlessFailed } from '../../lifecycle.js';

export class QemuProvider implements Provider, QemuHandlerDeps {
  readonly name: string;
  readonly log: Logger;
  /** Uploads in image-dir (the same files the builders' image services write). */
  readonly images: QemuImageService;
  readonly vms: VmHost;
  private readonly abort = new AbortController();
  private state: 'created' | 'running' | 'stopped' = 'created';
  private readonly accelChoice = new KeptUnlessFailed(() =>
    resolveAccel(this.config.accel, { qemu: this.config.qemuBinary, stateDir: this.config.stateDir, log: this.log }));

  constructor(readonly config: QemuProviderConfig, readonly ctx: ProviderContext) {
    this.name = config.name;
    this.log = ctx.log.child({ component: 'qemu', provider: config.name });
    this.images = new QemuImageService({ imageDir: config.imageDir, log: this.log });
    this.vms = new VmHost({ stateDir: config.stateDir, provider: config.name, qemuBinary: config.qemuBinary, log: this.log });
  }

  /** Aborted by stop(): launches in flight end (their VMs are left to the deleter). */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  async start(): Promise<void> {
    if (this.state !== 'created') return;
    this.state = 'running';
    await mkdir(this.config.stateDir, { recursive: true });
    const vms = await this.vms.list();
    this.log.info('provider started', { stateDir: this.config.stateDir, vms: vms.length, running: vms.filter((v) => v.pid !== null).length });
  }

  stop(): Promise<void> {
    if (this.state !== 'stopped') {
      this.state = 'stopped';
      this.abort.abort(new CloudError(`provider ${this.name} is stopping`));
      this.log.info('provider stopped');
    }
    return Promise.resolve();
  }

  /** The accelerator VMs start with (probed once for `auto`; a failed probe is not kept). */
  accel(): Promise<'kvm' | 'tcg'> {
    return this.accelChoice.get();
  }

  /** A pool of this provider. Thrown: Error for an unknown pool (a launcher bug). */
  pool(name: string): QemuPoolConfig {
    return poolNamed(this.config, name);
  }

  /** The label's config in the first pool that serves it. */
  labelConfig(label: string): QemuLabelConfig | undefined {
    return firstLabelConfig(this.config.pools, label);
  }

  /**
   * Core's choice of an upload of the label's diskimage whose file is in image-dir (lib/rollout/boot-choice.ts:
   * pins, revocations, a canary's share of launches by `key`, the launch's node id; without a key,
   * as availability checks ask, the newest that may serve); undefined when none.
   */
  async bootImage(label: QemuLabelConfig, key?: string): Promise<BootImage | undefined> {
    const chosen = await chooseBootUpload(this.ctx, {
      provider: this.name, diskimage: label.diskimage, ...(key !== undefined ? { key } : {}),
      usable: (x) => x.externalId !== null && validImageId(x.externalId) && existsSync(this.images.imagePath(x.externalId)),
    });
    if (!chosen) return undefined;
    return { uploadId: chosen.upload.id, externalId: chosen.externalId, path: this.images.imagePath(chosen.externalId), countOn: chosen.countOn };
  }

  /**
   * The upload a node record names in `image` before its launch (a validation boot of exactly
   * that upload, issue 14 §2): this provider's upload of the label's diskimage, not failed or
   * being deleted, with its file in image-dir. Thrown: LaunchError naming what does not fit.
   */
  async pinnedImage(uploadId: string, label: QemuLabelConfig): Promise<BootImage> {
    const u = await this.ctx.store.getUpload(uploadId);
    const why = pinnedUploadProblem(u, this.name, label.diskimage)
      ?? (!u?.externalId || !validImageId(u.externalId) ? 'has no image file yet'
        : !existsSync(this.images.imagePath(u.externalId)) ? `has no file ${this.images.imagePath(u.externalId)}`
          : undefined);
    if (why !== undefined || !u?.externalId) throw new LaunchError(`upload ${uploadId} ${why ?? 'is unusable'}`);
    return { uploadId: u.id, externalId: u.externalId, path: this.images.imagePath(u.externalId), countOn: null };
  }

  labelReady(label: string): Promise<boolean> {
    return labelReady(label, { label: (n) => this.labelConfig(n), bootImage: (l) => this.bootImage(l) }, this.log);
  }

  async listNodes(): Promise<ExternalNode[]> {
    return (await this.vms.list()).map((v) => ({
      externalId: v.record.id, name: v.record.hostname, provider: this.name, nodeId: v.record.nodeId, status: v.pid === null ? 'stopped' : 'running',
    }));
  }

  async cleanupNode(node: NodeRecord): Promise<void> {
    if (!node.externalId || !validImageId(node.externalId)) return;
    await this.vms.destroy(node.externalId);
  }

  /** Kills and removes VMs of this provider that no node record, valid or corrupt, accounts for. */
  async cleanupLeakedResources(): Promise<void> {
    // VMs first, records second: a VM listed was checkpointed on its record before it was made.
    const vms = await this.vms.list();
    if (vms.length === 0) return;
    const [nodes, corrupt] = await Promise.all([this.ctx.store.listNodes({ provider: this.name }), this.ctx.store.listCorruptNodes()]);
    const covered = vmCoverage(nodes, corrupt);
    for (const vm of vms.filter((v) => !covered(v))) {
      this.log.warn('leaked VM: killing it', { vm: vm.record.id, pid: vm.pid, formerNode: vm.record.nodeId });
      try {
        await this.vms.destroy(vm.record.id);
        this.ctx.onLeak?.('vm', 1);
      } catch (err) {
        this.log.warn('could not remove the leaked VM', { vm: vm.record.id, error: coerceError(err).message });
      }
    }
  }

  nodeDeleted(_node: NodeRecord): Promise<void> {
    return Promise.resolve();
  }

  getRequestHandler(pool: string, request: NodeRequestRecord): RequestHandler {
    const pc = this.pool(pool);
    return new QemuHandler(this, pc, { store: this.ctx.store, log: this.log.child({ pool, request: request.id }), pool: qemuPoolInfo(pc), request, clock: this.ctx.clock });
  }
}

/**
 * Whether a node record accounts for a VM: a record names it as its `externalId`, or the VM's
 * node has a record that names no VM yet. A record naming another VM does not cover it (an
 * earlier attempt of that node). A record that does not validate (`corrupt`,
 * Store.listCorruptNodes) covers every VM of its node id and the VM its external id names,
 * whatever its provider: a record we refuse must never get its VM killed. Pure.
 */
export function vmCoverage(nodes: readonly Pick<NodeRecord, 'id' | 'externalId'>[],
  corrupt: readonly Pick<NodeClaim, 'id' | 'externalId'>[] = []): (vm: FoundVm) => boolean {
  const vmOf = new Map(nodes.map((n) => [n.id, n.externalId]));
  const ids = new Set([...nodes, ...corrupt].flatMap((n) => (n.externalId ? [n.externalId] : [])));
  const corruptIds = new Set(corrupt.map((c) => c.id));
  return (vm) => ids.has(vm.record.id) || corruptIds.has(vm.record.nodeId) || (vmOf.has(vm.record.nodeId) && !vmOf.get(vm.record.nodeId));
}
