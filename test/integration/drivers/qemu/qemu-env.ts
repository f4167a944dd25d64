/**
 * Shared set-up of the qemu driver's integration tests: a temp dir (image-dir, state-dir), a
 * SQLite store with a live session, an SSH key pair whose public half is the provider's
 * `authorized-keys`, a config written as YAML and checked by the real loader, uploads made
 * through the driver's own image service and recorded ready, and a check that no QEMU of
 * this env is left running.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import type { ProviderContext } from '../../../../lib/drivers/contract/driver.js';
import type { QemuProviderConfig } from '../../../../lib/drivers/qemu/config.js';
import { QemuImageService } from '../../../../lib/drivers/qemu/image-store.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import type { UploadRecord } from '../../../../lib/store/models.js';
import type { Store } from '../../../../lib/store/store.js';
import { testLogger } from '../../../support/test-log.js';

/** Options of the test provider `vms` (pool `main`, label `vm` of diskimage `deb`). */
export interface QemuTestProvider {
  maxServers?: number;
  accel?: 'auto' | 'kvm' | 'tcg';
  bootTimeout?: number;
  memory?: number;
  /** The provider's `qemu-binary` (absent: the schema's default, the real QEMU). */
  qemuBinary?: string;
  extra?: Record<string, unknown>;
}

export class QemuEnv {
  private constructor(readonly dir: string, readonly store: Store, readonly sessionId: string, readonly keyFile: string) {}

  static async create(): Promise<QemuEnv> {
    const dir = await mkdtemp(path.join(tmpdir(), 'qemu-driver-'));
    const store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    const session = await store.openSession({ owner: 'qemu-driver-test', hostname: 'localhost', pid: process.pid, ttlMs: 3_600_000 });
    const keyFile = path.join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'qemu-driver-test', '-f', keyFile]);
    return new QemuEnv(dir, store, session.id, keyFile);
  }

  get imageDir(): string {
    return path.join(this.dir, 'images');
  }

  get stateDir(): string {
    return path.join(this.dir, 'state');
  }

  /** The YAML of the test config. */
  yaml(o: QemuTestProvider = {}): string {
    const provider = {
      name: 'vms', driver: 'qemu', 'image-dir': this.imageDir, 'state-dir': this.stateDir, accel: o.accel ?? 'auto',
      'boot-timeout': o.bootTimeout ?? 300, username: 'debian', 'authorized-keys': `${this.keyFile}.pub`,
      ...(o.qemuBinary ? { 'qemu-binary': o.qemuBinary } : {}),
      diskimages: [{ name: 'deb' }],
      pools: [{ name: 'main', 'max-servers': o.maxServers ?? 2, labels: [{ name: 'vm', diskimage: 'deb', memory: o.memory ?? 1024, cpus: 1 }] }],
      ...o.extra,
    };
    return [
      'labels: [{name: vm}]',
      'diskimages: [{name: deb, elements: [debian-minimal, vm, cloud-init, cloud-init-datasources, openssh-server]}]',
      `providers: [${JSON.stringify(provider)}]`,
      '',
    ].join('\n');
  }

  /** Loads the YAML with the real loader; returns the whole config and the `vms` provider. */
  config(o: QemuTestProvider = {}): { config: Config; provider: QemuProviderConfig } {
    const config = parseConfig(this.yaml(o), path.join(this.dir, 'nodepool.yaml'));
    const provider = config.providers.find((p) => p.name === 'vms');
    if (provider?.driver !== 'qemu') throw new Error('test config has no qemu provider vms');
    return { config, provider };
  }

  ctx(config: Config, onLeak?: (resource: string, count: number) => void): ProviderContext {
    return {
      store: this.store, log: testLogger(), clock: Date.now, config, sessionId: () => this.sessionId,
      ...(onLeak ? { onLeak } : {}),
    };
  }

  /** Uploads `file` (qcow2) through the driver's image service and records a ready build and upload of `deb`. */
  async readyUpload(file: string): Promise<UploadRecord> {
    const svc = new QemuImageService({ imageDir: this.imageDir, log: testLogger() });
    const build = await this.store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    await this.store.updateBuild(build.id, { state: 'ready' });
    const upload = await this.store.createUpload({ buildId: build.id, provider: 'vms', imageName: 'deb', externalName: 'deb-test' });
    const done = await svc.upload({
      name: 'deb-test', format: 'qcow2', filePath: file,
      properties: { nodepool_build_id: build.id, nodepool_upload_id: upload.id, nodepool_provider_name: 'vms', nodepool_image_name: 'deb' },
    });
    const ready = await this.store.updateUpload(upload.id, { state: 'ready', externalId: done.externalId, format: 'qcow2' });
    if (!ready) throw new Error(`upload ${upload.id} vanished`);
    return ready;
  }

  /** Pids of QEMU processes whose command line names this env's state dir. */
  async qemuPids(): Promise<number[]> {
    const out: number[] = [];
    for (const name of await readdir('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8');
        if (cmd.startsWith('qemu-system') && cmd.includes(this.stateDir)) out.push(Number(name));
      } catch {
        // gone
      }
    }
    return out;
  }

  /** Kills QEMUs this env left (a failed test), then removes everything. */
  async close(): Promise<void> {
    for (const pid of await this.qemuPids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await this.store.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}
