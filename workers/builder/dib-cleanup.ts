/**
 * Undoes what a killed or failed DIB build left in its private TMPDIR: unmounts (deepest
 * first, lazily if busy), detaches loop devices backed by files there, removes the dir.
 */
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Logger } from '../../lib/log.js';
import { loopDevicesUnder, mountsUnder } from './dib-cleanup-plan.js';

const exec = promisify(execFile);

async function tryExec(cmd: string, args: string[]): Promise<boolean> {
  try {
    await exec(cmd, args, { timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

/** Cleans `tmpDir` of mounts, loop devices and files. Never throws; logs what it could not undo. */
export async function cleanupBuildTmp(tmpDir: string, log: Logger): Promise<void> {
  try {
    const mounts = mountsUnder(await readFile('/proc/mounts', 'utf8'), tmpDir);
    for (const m of mounts) {
      if (!(await tryExec('umount', [m])) && !(await tryExec('umount', ['-l', m]))) log.warn('could not unmount', { mount: m });
    }
    if (mounts.length) log.info('unmounted build leftovers', { count: mounts.length, tmpDir });
    let losetup = '';
    try {
      losetup = (await exec('losetup', ['-nO', 'NAME,BACK-FILE'], { timeout: 10_000 })).stdout;
    } catch {
      // no losetup, or no loop support: nothing to detach
    }
    for (const dev of loopDevicesUnder(losetup, tmpDir)) {
      if (!(await tryExec('losetup', ['-d', dev]))) log.warn('could not detach loop device', { dev });
    }
    await rm(tmpDir, { recursive: true, force: true });
  } catch (err) {
    log.warn('build tmp cleanup incomplete', { tmpDir, error: (err as Error).message });
  }
}
