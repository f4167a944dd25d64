/**
 * The VMs of one qemu provider on this host. Each VM lives in `<state-dir>/<vm-id>/`:
 * `vm.json` (what it is: provider, node, image, port), `overlay.qcow2` (copy-on-write over
 * the upload), `seed.iso` (NoCloud), `console.log` (serial console) and `qemu.pid`. QEMU runs
 * daemonized (`-daemonize`: fork, setsid, fork again, so a session and process group apart from
 * the launcher's, and no parent to die with), so VMs
 * outlive the launcher and a new launcher re-adopts them from these files. A pid counts only
 * while `/proc/<pid>/cmdline` still names the VM's overlay (no pid-reuse accidents).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { coerceError, LaunchError } from '../../errors.js';
import { sleep } from '../../lifecycle.js';
import type { Logger } from '../../log.js';
import { createOverlay } from './qemu-img.js';
import { runCommand } from './run-command.js';
import { makeSeedIso } from './seed.js';

/** What `vm.json` records about a VM. */
export interface VmRecord {
  id: string;
  provider: string;
  nodeId: string;
  pool: string;
  label: string;
  /** The upload (image external id) the overlay is backed by. */
  image: string;
  hostname: string;
  /** 127.0.0.1 port forwarded to the guest's port 22. */
  port: number;
  accel: 'kvm' | 'tcg';
  memory: number;
  cpus: number;
  created: number;
  /** A snapshot build's instance: the builder id that booted it (build-instances.ts). */
  builder?: string;
}

/** A VM found in the state dir. */
export interface FoundVm {
  record: VmRecord;
  /** The QEMU process, or null when none runs for it. */
  pid: number | null;
}

/** What {@link VmHost.create} needs. */
export interface VmSpec {
  nodeId: string;
  pool: string;
  label: string;
  image: string;
  imagePath: string;
  hostname: string;
  accel: 'kvm' | 'tcg';
  memory: number;
  cpus: number;
  authorizedKeys: readonly string[];
  /** Set for a snapshot build's instance: the builder id that boots it. */
  builder?: string;
}

/** Options of {@link VmHost}. */
export interface VmHostOptions {
  stateDir: string;
  provider: string;
  qemuBinary: string;
  qemuImg?: string;
  genisoimage?: string;
  log: Logger;
}

/** A free TCP port on 127.0.0.1 (bound, read, closed; QEMU binds it right after). */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** The VM id for a node: its id and a random suffix (a relaunch gets a new one). */
export function newVmId(nodeId: string): string {
  return `${nodeId.replace(/[^A-Za-z0-9_-]/g, '_')}-${randomBytes(3).toString('hex')}`;
}

/**
 * Serial console text as a person reads it (pure): without the terminal escapes of SeaBIOS, grub
 * and the kernel, without iPXE's backspaced countdown, carriage returns or other control bytes.
 */
export function readableConsole(text: string): string {
  /* eslint-disable no-control-regex -- these are the control bytes being removed */
  return text
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
    .replace(/\x1b[^[]/g, '')
    .replace(/(?:\x08 \x08)+/g, '')
    .replace(/\r/g, '')
    .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
  /* eslint-enable no-control-regex */
}

/** The fw_cfg file that tells SeaBIOS its serial console's I/O port. */
const SERCON_PORT_FILE = 'sercon-port';

/** COM1's I/O port (0x3f8), as SeaBIOS reads `etc/sercon-port`: a little-endian integer. */
const SERCON_PORT = Buffer.from([0xf8, 0x03, 0, 0, 0, 0, 0, 0]);

/** The QEMU command line of a VM (pure). */
export function qemuArgs(dir: string, r: Pick<VmRecord, 'id' | 'accel' | 'memory' | 'cpus' | 'port'>): string[] {
  return [
    '-name', r.id, '-accel', r.accel, '-m', String(r.memory), '-smp', String(r.cpus),
    '-nodefaults', '-display', 'none', '-monitor', 'none', '-no-reboot',
    '-serial', `file:${path.join(dir, 'console.log')}`,
    // SeaBIOS writes its own messages ("No bootable device.") to the serial console too, so a
    // disk that does not boot says so in the console tail of the failed launch.
    '-fw_cfg', `name=etc/sercon-port,file=${path.join(dir, SERCON_PORT_FILE)}`,
    '-drive', `file=${path.join(dir, 'overlay.qcow2')},format=qcow2,if=virtio`,
    '-drive', `file=${path.join(dir, 'seed.iso')},format=raw,media=cdrom,readonly=on`,
    '-netdev', `user,id=n0,hostfwd=tcp:127.0.0.1:${r.port}-:22`, '-device', 'virtio-net-pci,netdev=n0',
    // Entropy for the guest's first boot (host key generation waits for it otherwise).
    '-device', 'virtio-rng-pci',
    '-pidfile', path.join(dir, 'qemu.pid'), '-daemonize',
  ];
}

export class VmHost {
  constructor(private readonly opts: VmHostOptions) {}

  /** The VM's directory. */
  dir(id: string): string {
    return path.join(this.opts.stateDir, id);
  }

  /**
   * Creates the overlay and seed, starts QEMU daemonized with a free forwarded port (another
   * port when that one was taken meanwhile) and resolves with its record once QEMU runs.
   * `id` must be new. On failure everything it made is removed. Thrown: LaunchError.
   */
  async create(id: string, spec: VmSpec, signal?: AbortSignal): Promise<FoundVm> {
    const dir = this.dir(id);
    try {
      await mkdir(dir, { recursive: true });
      const sig = signal ? { signal } : {};
      await createOverlay(this.opts.qemuImg ?? 'qemu-img', spec.imagePath, path.join(dir, 'overlay.qcow2'), sig);
      await writeFile(path.join(dir, SERCON_PORT_FILE), SERCON_PORT);
      await makeSeedIso(dir, path.join(dir, 'seed.iso'), { instanceId: id, hostname: spec.hostname, authorizedKeys: spec.authorizedKeys },
        { ...(this.opts.genisoimage ? { genisoimage: this.opts.genisoimage } : {}), ...sig });
      for (let attempt = 1; ; attempt++) {
        const record: VmRecord = {
          id, provider: this.opts.provider, nodeId: spec.nodeId, pool: spec.pool, label: spec.label, image: spec.image,
          hostname: spec.hostname, port: await freeLoopbackPort(), accel: spec.accel, memory: spec.memory, cpus: spec.cpus, created: Date.now(),
          ...(spec.builder !== undefined ? { builder: spec.builder } : {}),
        };
        await writeFile(path.join(dir, 'vm.json'), JSON.stringify(record, null, 2));
        try {
          // With -daemonize the command returns once the VM runs (or failed to set up: port taken, bad image).
          await runCommand(this.opts.qemuBinary, qemuArgs(dir, record), { timeoutMs: 60_000, ...sig });
        } catch (err) {
          const e = coerceError(err);
          if (attempt < 3 && /hostfwd|host forwarding/i.test(e.message)) continue;
          throw e;
        }
        const pid = await this.runningPid(id);
        if (pid === null) throw new LaunchError(`QEMU for VM ${id} exited right after it started (console: ${path.join(dir, 'console.log')})`);
        return { record, pid };
      }
    } catch (err) {
      await this.destroy(id);
      const e = coerceError(err);
      throw e instanceof LaunchError || signal?.aborted ? e : new LaunchError(`cannot start VM ${id}: ${e.message}`, { cause: e });
    }
  }

  /** The pid of the VM's QEMU while it runs (checked against its command line), else null. */
  async runningPid(id: string): Promise<number | null> {
    let pid: number;
    try {
      pid = Number((await readFile(path.join(this.dir(id), 'qemu.pid'), 'utf8')).trim());
    } catch {
      return null;
    }
    if (!Number.isInteger(pid) || pid <= 1) return null;
    return (await this.runsVm(pid, id)) ? pid : null;
  }

  /** Whether process `pid` is the VM's QEMU (its command line names the VM's overlay). */
  private async runsVm(pid: number, id: string): Promise<boolean> {
    try {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
      return cmdline.includes(path.join(this.dir(id), 'overlay.qcow2'));
    } catch {
      return false;
    }
  }

  /** This provider's VMs in the state dir (running or not). */
  async list(): Promise<FoundVm[]> {
    let names: string[];
    try {
      names = await readdir(this.opts.stateDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: FoundVm[] = [];
    for (const name of names.sort()) {
      let record: VmRecord;
      try {
        record = JSON.parse(await readFile(path.join(this.opts.stateDir, name, 'vm.json'), 'utf8')) as VmRecord;
      } catch {
        continue; // not a VM directory (or one being created: vm.json comes before QEMU)
      }
      if (record.provider !== this.opts.provider || record.id !== name) continue;
      out.push({ record, pid: await this.runningPid(name) });
    }
    return out;
  }

  /** Stops the VM's QEMU (TERM, then KILL after `graceMs`) and removes its directory. Gone already is fine. */
  async destroy(id: string, graceMs = 10_000): Promise<void> {
    const pid = await this.runningPid(id);
    if (pid !== null) {
      this.signal(pid, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      // The process itself, not its pid file: QEMU removes that as it starts to exit.
      while (await this.runsVm(pid, id)) {
        if (Date.now() >= deadline) {
          this.signal(pid, 'SIGKILL');
          if (Date.now() >= deadline + 5000) throw new LaunchError(`QEMU ${pid} of VM ${id} survived SIGKILL`);
        }
        await sleep(100);
      }
      this.opts.log.info('VM stopped', { vm: id, pid });
    }
    await rm(this.dir(id), { recursive: true, force: true });
  }

  /** The last `bytes` of the VM's serial console (for failure reasons). */
  async consoleTail(id: string, bytes = 2000): Promise<string> {
    try {
      const fh = await open(path.join(this.dir(id), 'console.log'), 'r');
      try {
        const { size } = await fh.stat();
        const start = Math.max(0, size - bytes);
        const buf = Buffer.alloc(size - start);
        await fh.read(buf, 0, buf.length, start);
        return readableConsole(buf.toString('utf8'));
      } finally {
        await fh.close();
      }
    } catch {
      return '';
    }
  }

  /** Signals the VM's QEMU (it runs no children: user-mode networking is inside QEMU). */
  private signal(pid: number, sig: NodeJS.Signals): void {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}
