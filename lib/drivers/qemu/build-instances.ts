/**
 * Build instances of a qemu provider (the build-instance capability, contract/build-instance.ts):
 * VMs on the builder's host, in `<state-dir>/builds/` apart from the launcher's VMs (so the
 * launcher's leak cleanup never sees them), booted from an overlay of the base image file,
 * with the build's key in their NoCloud seed. The snapshot is the overlay flattened by
 * `qemu-img convert` once the guest has powered itself off.
 */
import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { coerceError, LaunchError } from '../../errors.js';
import { convertArgs } from '../../images/formats.js';
import { sleep } from '../../lifecycle.js';
import type { Logger } from '../../log.js';
import { runCommand } from '../../run-command.js';
import type { BuildInstance, BuildInstances, BuildInstanceSpec, SnapshotProgress } from '../contract/build-instance.js';
import { resolveAccel } from './accel.js';
import type { QemuProviderConfig } from './config.js';
import { vmHostname } from './handler.js';
import { VmHost } from './vm-host.js';
import { waitForVmSsh } from './wait-ssh.js';

/** The `pool` a build instance's vm.json names. */
const BUILD_POOL = 'snapshot-build';

/** A VM id from the build id (validated by the builder before any path is made). */
function buildVmId(buildId: string): string {
  return `build-${buildId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

export class QemuBuildInstances implements BuildInstances {
  private readonly vms: VmHost;

  constructor(private readonly config: QemuProviderConfig, private readonly log: Logger, private readonly qemuImg = 'qemu-img') {
    this.vms = new VmHost({ stateDir: path.join(config.stateDir, 'builds'), provider: config.name, qemuBinary: config.qemuBinary, qemuImg, log });
  }

  async boot(spec: BuildInstanceSpec, signal: AbortSignal): Promise<BuildInstance> {
    if (!path.isAbsolute(spec.baseImage)) throw new LaunchError(`base-image ${JSON.stringify(spec.baseImage)}: expected the absolute path of an image file (qemu provider ${this.config.name})`);
    const id = buildVmId(spec.buildId);
    const accel = await resolveAccel(this.config.accel, { qemu: this.config.qemuBinary, stateDir: this.config.stateDir, log: this.log });
    // A VM of the same build left by an earlier attempt goes first.
    await this.vms.destroy(id);
    const vm = await this.vms.create(id, {
      nodeId: '', pool: BUILD_POOL, label: spec.buildId, image: spec.baseImage, imagePath: spec.baseImage,
      hostname: vmHostname('build', spec.buildId), accel, memory: spec.memory ?? 1024, cpus: spec.cpus ?? 1,
      authorizedKeys: [spec.authorizedKey], builder: spec.builderId,
    }, signal);
    this.log.info('build instance started', { vm: id, pid: vm.pid, port: vm.record.port, accel, base: spec.baseImage });
    try {
      const hostKeys = await waitForVmSsh(this.vms, vm, { bootTimeout: this.config.bootTimeout, signal, log: this.log });
      return { id, host: '127.0.0.1', port: vm.record.port, hostKeys, username: this.config.username };
    } catch (err) {
      const tail = signal.aborted ? '' : await this.vms.consoleTail(id, 1500);
      await this.remove(id);
      const e = coerceError(err);
      if (signal.aborted) throw e;
      throw new LaunchError(tail ? `${e.message}\n--- console tail ---\n${tail.trim()}` : e.message, { cause: e });
    }
  }

  async stop(id: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.vms.runningPid(id)) !== null) {
      signal.throwIfAborted();
      if (Date.now() >= deadline) throw new LaunchError(`build instance ${id} did not power off within ${Math.round(timeoutMs / 1000)} s`);
      await sleep(500);
    }
  }

  async snapshot(id: string, dest: string, format: string, opts: { signal: AbortSignal; onProgress?: SnapshotProgress }): Promise<void> {
    if ((await this.vms.runningPid(id)) !== null) throw new LaunchError(`build instance ${id} still runs: a snapshot needs it stopped`);
    const tmp = `${dest}.snapshotting`;
    try {
      const r = await runCommand([this.qemuImg, ...convertArgs(path.join(this.vms.dir(id), 'overlay.qcow2'), 'qcow2', tmp, format)], {
        signal: opts.signal, processGroup: true, killGraceMs: 5000,
        onLine(line) {
          for (const m of line.matchAll(/\((\d+(?:\.\d+)?)\/100%\)/g)) opts.onProgress?.(Number(m[1]), 100);
        },
      });
      if (r.aborted) throw opts.signal.reason instanceof Error ? opts.signal.reason : new LaunchError('snapshot aborted');
      if (r.exitCode !== 0) throw new LaunchError(`qemu-img convert of build instance ${id} failed (exit ${r.exitCode ?? r.signal}): ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
      await rename(tmp, dest);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  remove(id: string): Promise<void> {
    return this.vms.destroy(id);
  }

  async leftovers(builderId: string): Promise<string[]> {
    return (await this.vms.list()).filter((v) => v.record.builder === builderId && v.record.pool === BUILD_POOL).map((v) => v.record.id);
  }
}
