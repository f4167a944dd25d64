/**
 * Test support: ONE saved, booted guest of the bootable test image (test/support/qemu-image.ts),
 * made once per machine and run: the image booted by real QEMU through the driver's own VmHost
 * (qemuArgs()'s device list plus a QMP socket, a NoCloud seed holding a run-wide key pair),
 * cloud-init finished, then live-migrated to a zstd file. Cached beside the image, keyed by the
 * image's sha256, the QEMU version, memory and cpus; a lock directory makes concurrent files wait
 * for one save. test/support/qemu-resume starts guests from it in seconds instead of booting them
 * (about 110–150 CPU-seconds each under TCG); `qemuResumeWrapper()` writes the `qemu-binary:` a
 * test config names to get that.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { VmHost } from '../../lib/drivers/qemu/vm-host.js';
import { pollUntil, waitFor } from '../../lib/lifecycle.js';
import { keyscan } from '../../lib/ssh/keyscan.js';
import { runSshCommand } from '../../lib/ssh/ssh-command.js';
import { writeQemuAhead } from './ahead.js';
import { bootableImage, QEMU_TEST_USER } from './qemu-image.js';
import { madeOnce } from './made-once.js';
import { testLogger } from './test-log.js';

/** The guest size the saved state has: a restore needs the same `-m` and `-smp`. */
export const SAVED_GUEST_MEMORY = 1024;
export const SAVED_GUEST_CPUS = 1;
/** The hostname the saved guest booted with (qemu-resume replaces it with each node's). */
const SAVED_HOSTNAME = 'saved-guest';
const QEMU = 'qemu-system-x86_64';
/**
 * Run as root in the guest before it is saved, so each SSH connection costs restored guests a
 * fraction of the CPU (under TCG an sshd connection took ~1 CPU-s and a login ~3: a driver key
 * scan, three connections bounded by 10 s, then failed every time while QEMU got 15 % of a CPU,
 * as on this machine at load 13). sshd without re-exec (-r, so no program load per connection),
 * no address-space randomisation (TCG reuses translated code only at the same addresses), no
 * pam_systemd or pam_motd in the session (a logind session and motd scripts per login), and no
 * timers or time sync (a restored guest's clock jumps forward to the host's: timers due would fire).
 */
const GUEST_TUNING = [
  'set -e',
  'echo kernel.randomize_va_space=0 > /etc/sysctl.d/90-test-guest.conf',
  'sysctl -q -w kernel.randomize_va_space=0',
  'echo SSHD_OPTS=-r > /etc/default/ssh',
  String.raw`sed -i 's/^session\s\+optional\s\+pam_systemd\.so/#&/' /etc/pam.d/common-session`,
  String.raw`sed -i 's/^session\s\+optional\s\+pam_motd\.so/#&/' /etc/pam.d/sshd`,
  'systemctl stop systemd-timesyncd.service $(systemctl list-units --type=timer --plain --no-legend | cut -d" " -f1)',
  'systemctl restart ssh',
].join('\n');
/** Changes whenever what a save does to the guest changes, so an older saved guest is not reused. */
const SAVE_FORMAT = 2;
const RESUME = path.resolve('test/support/qemu-resume');

/** What `manifest.json` of a saved guest says (qemu-resume reads it with jq). */
export interface SavedGuestManifest {
  memory: number;
  cpus: number;
  accel: 'tcg';
  /** The image the guest booted from, its sha256 and size. */
  image: string;
  imageSha256: string;
  imageSize: number;
  qemuVersion: string;
  user: string;
  hostname: string;
  /** The guest's SSH host keys, `"<type> <base64>"` (known_hosts lines without the host). */
  hostKeys: string[];
  /** The run key pair the guest's `authorized_keys` holds. */
  privateKey: string;
  publicKey: string;
  /** The migration stream (zstd) and the guest's disk at save time (qcow2 over the image). */
  state: string;
  disk: string;
}

/** A saved guest and how long getting it took. */
export interface SavedGuest {
  dir: string;
  manifest: SavedGuestManifest;
  /** Seconds spent booting and saving in this call (0 when cached). */
  saveSeconds: number;
}

const ROOT = path.join(os.tmpdir(), 'nodepool-test-qemu-images', 'saved-guests');

/** sha256 of a file, cached in ROOT/hashes by device, inode, size and mtime (as qemu-resume caches it). */
async function fileSha256(file: string): Promise<string> {
  const s = await stat(file, { bigint: true });
  const cached = path.join(ROOT, 'hashes', `${s.dev}-${s.ino}-${s.size}-${s.mtimeNs / 1_000_000_000n}.${String(s.mtimeNs % 1_000_000_000n).padStart(9, '0')}`);
  const known = (await readFile(cached, 'utf8').catch(() => '')).trim();
  if (known) return known;
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  const sha = hash.digest('hex');
  await mkdir(path.dirname(cached), { recursive: true });
  await writeFile(`${cached}.${process.pid}`, `${sha}\n`);
  await rename(`${cached}.${process.pid}`, cached);
  return sha;
}

/** One QMP session: commands in order, each answered before the next (events skipped). */
async function qmp(socket: string): Promise<{ run(execute: string, args?: object): Promise<unknown>; close(): void }> {
  const conn = net.createConnection(socket);
  const lines: string[] = [];
  let buf = '';
  let waiting: (() => void) | undefined;
  let closed = false;
  conn.setEncoding('utf8');
  conn.on('data', (chunk: string) => {
    buf += chunk;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    waiting?.();
  });
  conn.on('close', () => { closed = true; waiting?.(); });
  conn.on('error', () => { closed = true; waiting?.(); });
  const next = async (what: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const line = lines.shift();
      if (line !== undefined) {
        const msg = JSON.parse(line) as Record<string, unknown>;
        if (!('event' in msg)) return msg;
        continue;
      }
      if (closed) throw new Error(`QMP socket ${socket} closed awaiting ${what}`);
      const timer = new Promise<void>((resolve) => { waiting = resolve; setTimeout(resolve, 30_000).unref(); });
      const before = lines.length;
      await timer;
      if (lines.length === before && !closed) throw new Error(`no QMP answer to ${what} within 30 s`);
    }
  };
  await next('the greeting');
  return {
    async run(execute, args) {
      conn.write(`${JSON.stringify({ execute, ...(args ? { arguments: args } : {}) })}\n`);
      const msg = await next(execute);
      if ('error' in msg) throw new Error(`QMP ${execute}: ${JSON.stringify(msg.error)}`);
      return msg.return;
    },
    close: () => conn.destroy(),
  };
}

/** Live-migrates the guest into `state` (no `stop` first: the stream then records "running"), then quits QEMU. */
async function saveState(socket: string, state: string): Promise<void> {
  const q = await qmp(socket);
  try {
    await q.run('qmp_capabilities');
    await q.run('migrate-set-parameters', { 'max-bandwidth': 10 * 1024 ** 3 });
    await q.run('migrate', { uri: `exec:zstd -q -1 -T1 > '${state}'` });
    let last = '';
    const done = await pollUntil(async () => {
      last = String(((await q.run('query-migrate')) as { status?: string }).status);
      if (last === 'failed' || last === 'cancelled') throw new Error(`saving the guest: migration ${last}`);
      return last === 'completed' ? true : undefined;
    }, { timeoutMs: 180_000, intervalMs: 500 });
    if (!done) throw new Error(`saving the guest: migration not completed within 180 s (status ${last})`);
    await q.run('quit').catch(() => undefined); // QEMU may close the socket before it answers
  } finally {
    q.close();
  }
}

/** Boots the image, waits for cloud-init, saves the guest into `work` with paths as they will be in `final`. */
async function save(image: string, work: string, final: string): Promise<SavedGuestManifest> {
  const key = path.join(work, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'nodepool-test-saved-guest', '-f', key]);
  const socket = path.join(work, 'qmp.sock');
  const qemuWithQmp = path.join(work, 'qemu-qmp');
  // Ahead of the tests beside it, as the image build (ahead.ts).
  await writeQemuAhead(qemuWithQmp, QEMU, `-qmp unix:${socket},server=on,wait=off`);
  const [imageSha256, imageSize] = [await fileSha256(image), (await stat(image)).size];
  const vms = new VmHost({ stateDir: path.join(work, 'vm'), provider: 'saved-guest', qemuBinary: qemuWithQmp, log: testLogger() });
  const id = 'saved-guest';
  try {
    const vm = await vms.create(id, {
      nodeId: '0', pool: 'saved', label: 'saved', image: 'saved', imagePath: image, hostname: SAVED_HOSTNAME,
      accel: 'tcg', memory: SAVED_GUEST_MEMORY, cpus: SAVED_GUEST_CPUS, authorizedKeys: [(await readFile(`${key}.pub`, 'utf8')).trim()],
    });
    const { port } = vm.record;
    let last = 'no answer yet';
    // Linger keeps the user's systemd running, so a restored guest's first login does not start it (tens of s under load).
    const booted = await pollUntil(async (remaining) => {
      if ((await vms.runningPid(id)) === null) throw new Error(`the saved guest's QEMU exited while booting; console:\n${await vms.consoleTail(id)}`);
      const r = await runSshCommand({
        host: '127.0.0.1', port, user: QEMU_TEST_USER, privateKey: key, hostKeys: [], timeoutMs: Math.min(remaining, 300_000),
        command: `cloud-init status --wait >/dev/null && sudo loginctl enable-linger $(id -un) && echo ${Buffer.from(GUEST_TUNING).toString('base64')} | base64 -d | sudo sh && sync`,
      });
      last = `exit ${r.exitCode}: ${r.outputTail.trim()}`;
      return r.exitCode === 0 ? true : undefined;
    }, { timeoutMs: 1_500_000, intervalMs: 5000 });
    if (!booted) throw new Error(`the saved guest did not finish cloud-init within 25 min (${last}); console:\n${await vms.consoleTail(id)}`);
    const hostKeys = await keyscan('127.0.0.1', port, { timeoutMs: 60_000, retryMs: 1000 });
    await saveState(socket, path.join(work, 'state.zst'));
    await waitFor(async () => (await vms.runningPid(id)) === null, { timeoutMs: 60_000, what: 'the saved guest\'s QEMU to quit', intervalMs: 200 });
    await rename(path.join(vms.dir(id), 'overlay.qcow2'), path.join(work, 'disk.qcow2'));
    return {
      memory: SAVED_GUEST_MEMORY, cpus: SAVED_GUEST_CPUS, accel: 'tcg', image, imageSha256, imageSize, qemuVersion: qemuVersion(),
      user: QEMU_TEST_USER, hostname: SAVED_HOSTNAME, hostKeys,
      privateKey: path.join(final, 'id_ed25519'), publicKey: path.join(final, 'id_ed25519.pub'),
      state: path.join(final, 'state.zst'), disk: path.join(final, 'disk.qcow2'),
    };
  } finally {
    await vms.destroy(id);
    await rm(socket, { force: true });
  }
}

function qemuVersion(): string {
  return execFileSync(QEMU, ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? '';
}

/**
 * The saved guest of the bootable image, saving it first if no run has yet (a boot with
 * cloud-init, then 3 s to save: 2–4 min on a quiet machine, 13–15 min at load 13). Thrown: Error
 * when the boot or the save fails, or another process's build or save does not finish in 55 min.
 */
export async function savedGuest(): Promise<SavedGuest> {
  const image = (await bootableImage()).path;
  const key = createHash('sha256').update(JSON.stringify([await fileSha256(image), qemuVersion(), SAVED_GUEST_MEMORY, SAVED_GUEST_CPUS, SAVE_FORMAT]))
    .digest('hex').slice(0, 16);
  const dir = path.join(ROOT, key);
  const manifestFile = path.join(dir, 'manifest.json');
  await mkdir(ROOT, { recursive: true });
  const started = Date.now();
  const work = `${dir}.tmp-${process.pid}`;
  const { ready, made } = await madeOnce(manifestFile, `${dir}.lock`, async () => {
    try {
      await rm(work, { recursive: true, force: true });
      await mkdir(work, { recursive: true });
      const manifest = await save(image, work, dir);
      await writeFile(path.join(work, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
      await rm(path.join(work, 'vm'), { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
      await rename(work, dir);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }, 3_300_000);
  if (!ready) throw new Error(`no saved test guest in ${dir} within 55 min (another process's build or save did not finish)`);
  const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as SavedGuestManifest;
  return { dir, manifest, saveSeconds: made ? Math.round((Date.now() - started) / 1000) : 0 };
}

/** Options of {@link qemuResumeWrapper}. */
export interface ResumeWrapperOptions {
  /**
   * While this file exists, a resumed VM's start stays in progress once its QEMU runs (the
   * launch has not returned, the node is `building`), at most 35 s: a test acts in that window.
   */
  holdWhile?: string;
}

/**
 * Writes `<dir>/qemu-resume`, the `qemu-binary:` of a test config whose 1024 MB guests of the
 * bootable image are resumed from `saved` (any other VM boots for real), and returns its path.
 */
export async function qemuResumeWrapper(saved: SavedGuest, dir: string, opts: ResumeWrapperOptions = {}): Promise<string> {
  const file = path.join(dir, 'qemu-resume');
  const hold = opts.holdWhile === undefined ? '' : ` --hold-while '${opts.holdWhile}'`;
  await writeFile(file, `#!/bin/sh\nexec '${RESUME}'${hold} '${saved.dir}' "$@"\n`);
  await chmod(file, 0o755);
  return file;
}
