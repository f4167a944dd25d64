/**
 * `accel: auto`: KVM only when a VM actually runs with it. `/dev/kvm` existing is not enough:
 * in some nested setups (this project's machines) KVM starts a guest that then hangs, or runs
 * it far slower than emulation. The probe boots a 512-byte boot sector that writes "OK" to
 * the serial port and powers off through QEMU's `isa-debug-exit` device, once under TCG and
 * once under KVM, each bounded. KVM is chosen only when its run succeeds and takes no longer
 * than max(2 × the TCG run, TCG run + 1 s): a healthy KVM runs it in a fraction of a second,
 * a broken one hangs or crawls (6.8 s against 0.23 s here, where a Linux guest under KVM
 * prints nothing in 45 s). The verdict is cached per host (hostname, kernel release, QEMU
 * binary) in `<state-dir>/accel-probe.json`, so it costs about a second once per host.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../log.js';
import type { Accel } from './config.js';

/** The probe's verdict, as cached. */
export interface AccelVerdict {
  accel: 'kvm' | 'tcg';
  reason: string;
  host: string;
  kernel: string;
  qemu: string;
  at: number;
}

/**
 * mov dx,0x3f8; mov al,'O'; out dx,al; mov al,'K'; out dx,al; mov al,10; out dx,al;
 * mov dx,0xf4; mov al,1; out dx,al (isa-debug-exit: QEMU exits with (1<<1)|1 = 3); hlt; jmp $-1
 */
const BOOT_CODE = [0xba, 0xf8, 0x03, 0xb0, 0x4f, 0xee, 0xb0, 0x4b, 0xee, 0xb0, 0x0a, 0xee, 0xba, 0xf4, 0x00, 0xb0, 0x01, 0xee, 0xf4, 0xeb, 0xfd];

/** The probe's boot sector (pure). */
export function probeBootSector(): Buffer {
  const b = Buffer.alloc(512);
  Buffer.from(BOOT_CODE).copy(b);
  b[510] = 0x55;
  b[511] = 0xaa;
  return b;
}

/** Runs the probe guest once; resolves with its duration in ms, or a reason it failed. */
function runProbe(qemu: string, accel: 'kvm' | 'tcg', image: string, timeoutMs: number): Promise<{ ms: number } | { failed: string }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(qemu, ['-accel', accel, '-nodefaults', '-display', 'none', '-no-reboot', '-m', '16', '-serial', 'stdio',
      '-drive', `file=${image},format=raw,if=ide`, '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => { clearTimeout(timer); resolve({ failed: `cannot run ${qemu}: ${e.message}` }); });
    child.once('close', (code) => {
      clearTimeout(timer);
      const ms = Date.now() - started;
      if (code === 3 && out.includes('OK')) return resolve({ ms });
      if (code === null) return resolve({ failed: `the ${accel} probe guest did not finish within ${timeoutMs} ms` });
      resolve({ failed: `the ${accel} probe guest ended with exit ${code}: ${err.trim().split('\n').slice(-2).join(' ')}` });
    });
  });
}

/** Boots the probe under both accelerators and decides (no cache). */
export async function probeAccel(qemu: string): Promise<Omit<AccelVerdict, 'host' | 'kernel' | 'qemu' | 'at'>> {
  try {
    await access('/dev/kvm', constants.R_OK | constants.W_OK);
  } catch {
    return { accel: 'tcg', reason: '/dev/kvm is missing or not accessible' };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-accel-'));
  try {
    const image = path.join(dir, 'probe.img');
    await writeFile(image, probeBootSector());
    const tcg = await runProbe(qemu, 'tcg', image, 20_000);
    if ('failed' in tcg) return { accel: 'tcg', reason: `the TCG reference run failed (${tcg.failed}); not trying KVM` };
    const limit = Math.max(2 * tcg.ms, tcg.ms + 1000);
    const kvm = await runProbe(qemu, 'kvm', image, limit);
    if ('failed' in kvm) return { accel: 'tcg', reason: `${kvm.failed} (TCG took ${tcg.ms} ms)` };
    return { accel: 'kvm', reason: `the probe guest ran under KVM in ${kvm.ms} ms (TCG ${tcg.ms} ms)` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Resolves `accel` to what VMs are started with: kvm/tcg as configured, auto through the cached probe. */
export async function resolveAccel(accel: Accel, opts: { qemu: string; stateDir: string; log: Logger }): Promise<'kvm' | 'tcg'> {
  if (accel !== 'auto') return accel;
  const file = path.join(opts.stateDir, 'accel-probe.json');
  const key = { host: os.hostname(), kernel: os.release(), qemu: opts.qemu };
  try {
    const cached = JSON.parse(await readFile(file, 'utf8')) as AccelVerdict;
    if (cached.host === key.host && cached.kernel === key.kernel && cached.qemu === key.qemu && (cached.accel === 'kvm' || cached.accel === 'tcg')) return cached.accel;
  } catch {
    // no verdict yet
  }
  const verdict: AccelVerdict = { ...(await probeAccel(opts.qemu)), ...key, at: Date.now() };
  opts.log.info('accelerator probed', { accel: verdict.accel, reason: verdict.reason });
  await mkdir(opts.stateDir, { recursive: true });
  const part = `${file}.${process.pid}.part`;
  await writeFile(part, JSON.stringify(verdict, null, 2));
  await rename(part, file);
  return verdict.accel;
}
