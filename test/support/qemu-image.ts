/**
 * Test support: ONE bootable Debian 12 image (DIB, cloud-init, sshd) for the qemu driver's
 * tests, built through test/support/dib-cmd (the kpartx shim in a private mount namespace
 * where the kernel lacks device-mapper) and cached under the temp dir, keyed by the elements
 * and environment: the first test file of a run builds it (about 2–4 min), every later file
 * and run reuses it. A lock directory makes concurrent files wait for one build instead of
 * starting a second. `NODEPOOL_TEST_QEMU_IMAGE` names an existing qcow2 to use instead.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { putAhead } from './ahead.js';
import { bookwormDibEnv } from './debian-mirror.js';
import { madeOnce } from './made-once.js';

/** The wrapper DIB runs through (see its header). */
export const DIB_CMD = path.resolve('test/support/dib-cmd');

/** Elements of a VM with SSH and cloud-init from Debian's own packages (docs/drivers/qemu.md). */
export const QEMU_TEST_ELEMENTS = ['debian-minimal', 'vm', 'cloud-init', 'cloud-init-datasources', 'openssh-server'] as const;

/** Extra packages: without ifupdown cloud-init renders networkd config that Debian leaves disabled (no network). */
export const QEMU_TEST_PACKAGES = ['ifupdown'] as const;

/** The login user of the image (cloud-init's Debian default user). */
export const QEMU_TEST_USER = 'debian';

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** env-vars of the build besides the mirrors. */
export function qemuImageEnv(): Record<string, string> {
  return {
    ...bookwormDibEnv(),
    DIB_RELEASE: 'bookworm',
    DIB_GRUB_TIMEOUT: '0',
    DIB_CLOUD_INIT_DATASOURCES: 'NoCloud, ConfigDrive',
    DIB_APT_MINIMAL_CREATE_INTERFACES: '0',
    // Keeps debootstrap's result as a tarball in the shared cache, for warmDibCache's users.
    DIB_DEBOOTSTRAP_CACHE: '1',
  };
}

/**
 * A DIB stand-in for tests that boot this image from builds: takes DIB's argv and copies
 * $COPY_DIB_SOURCE (the image) to `<out>.qcow2` with its checksums, in seconds.
 */
export const COPY_DIB = `#!/bin/bash
set -eu
out=
while [ $# -gt 0 ]; do case "$1" in -o) out=$2; shift ;; esac; shift; done
[ -n "$out" ] || { echo "no -o given" >&2; exit 2; }
mkdir -p "$out.d"
cp -L "$COPY_DIB_SOURCE" "$out.qcow2"
sha256sum "$out.qcow2" > "$out.qcow2.sha256"
md5sum "$out.qcow2" > "$out.qcow2.md5"
echo "Build completed successfully"
`;

/** A built image and how long getting it took. */
export interface BootableImage {
  path: string;
  /** Seconds spent building in this call (0 when cached). */
  buildSeconds: number;
}

/** DIB's image cache of the bootable build: apt's packages and the bookworm debootstrap tarball. */
const DIB_CACHE_DIR = path.join(os.tmpdir(), 'nodepool-test-dib-cache');

/** Longest a build may take before it is killed, and how long others wait for one. */
const BUILD_BOUND_MS = 2_700_000;

async function build(dir: string, out: string): Promise<void> {
  const tmp = path.join(dir, 'tmp');
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  const env = { PATH: SYSTEM_PATH, HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8', TMPDIR: tmp, ...qemuImageEnv() };
  const args = ['-x', '-o', out, '-t', 'qcow2', '--image-cache', DIB_CACHE_DIR,
    '-p', QEMU_TEST_PACKAGES.join(','), ...QEMU_TEST_ELEMENTS];
  const log = createWriteStream(path.join(dir, 'build.log'));
  // Ahead of the tests beside it (ahead.ts): every VM file waits for this build and then the
  // saved guest, while the files beside it are many and short. At the default priority, in a
  // clean-clone run (load 9-10), it took 17 minutes instead of 3.
  const child = spawn(DIB_CMD, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  await putAhead(child.pid);
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  // A cold build downloads about 140 MB of packages from the Debian mirror: in a clean-clone
  // run on a loaded machine it was still installing them at 20 minutes.
  const timer = setTimeout(() => { try { process.kill(-(child.pid as number), 'SIGKILL'); } catch { /* gone */ } }, BUILD_BOUND_MS);
  const code = await new Promise<number | null>((resolve) => { child.once('close', (c) => resolve(c)); child.once('error', () => resolve(null)); });
  clearTimeout(timer);
  log.end();
  await rm(tmp, { recursive: true, force: true });
  if (code !== 0) {
    const tail = (await readFile(path.join(dir, 'build.log'), 'utf8').catch(() => '')).slice(-3000);
    throw new Error(`building the bootable test image failed (exit ${code}); log ${path.join(dir, 'build.log')}:\n${tail}`);
  }
}

/**
 * The path of the cached bootable qcow2, building it first if no run has yet. Thrown: Error
 * when the build fails (with the log tail) or another process's build does not finish in 50 min.
 */
export async function bootableImage(): Promise<BootableImage> {
  const given = process.env.NODEPOOL_TEST_QEMU_IMAGE;
  if (given) return { path: given, buildSeconds: 0 };
  const key = createHash('sha256').update(JSON.stringify([QEMU_TEST_ELEMENTS, QEMU_TEST_PACKAGES, qemuImageEnv()])).digest('hex').slice(0, 16);
  const dir = path.join(os.tmpdir(), 'nodepool-test-qemu-images', key);
  const image = path.join(dir, 'image.qcow2');
  await mkdir(dir, { recursive: true });
  const started = Date.now();
  // A failed build ends the wait (it is thrown), not retried for 25 min.
  const { ready, made } = await madeOnce(image, path.join(dir, 'lock'), async () => {
    await build(dir, path.join(dir, 'build'));
    await rename(path.join(dir, 'build.qcow2'), image);
  }, BUILD_BOUND_MS + 300_000);
  if (!ready) throw new Error(`no bootable test image in ${dir} within ${(BUILD_BOUND_MS + 300_000) / 60_000} min (another process's build did not finish)`);
  return { path: image, buildSeconds: made ? Math.round((Date.now() - started) / 1000) : 0 };
}

/**
 * DIB's image cache once the bootable image exists (waiting for, or making, it): a bookworm
 * build given it (with `DIB_DEBIAN_USE_DEBOOTSTRAP_CACHE=1`) starts from the cached debootstrap
 * tarball and finds its packages downloaded. Only after that build: two builds' apt-get in one
 * archive directory clash on its lock. Thrown: as {@link bootableImage}.
 */
export async function warmDibCache(): Promise<string> {
  await bootableImage();
  await mkdir(DIB_CACHE_DIR, { recursive: true });
  return DIB_CACHE_DIR;
}
