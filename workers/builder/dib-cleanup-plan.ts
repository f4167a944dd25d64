/**
 * What to undo after a killed DIB build (pure): mounts and loop devices under the build's
 * private TMPDIR. DIB killed by signal leaves its tmpfs/bind mounts and loop device behind.
 */

/** Mount points under `dir`, deepest first (so nested mounts go before their parents). */
export function mountsUnder(procMounts: string, dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : dir + '/';
  return procMounts.split('\n')
    .map((line) => line.split(' ')[1])
    .filter((m): m is string => typeof m === 'string' && m.length > 0)
    .map((m) => m.replace(/\\040/g, ' '))
    .filter((m) => m === dir || m.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

/** Loop devices whose backing file is under `dir`, from `losetup -nO NAME,BACK-FILE` output. */
export function loopDevicesUnder(losetupOutput: string, dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : dir + '/';
  const out: string[] = [];
  for (const line of losetupOutput.split('\n')) {
    const m = /^(\/dev\/loop\d+)\s+(.+?)\s*$/.exec(line);
    if (m && (m[2] as string).startsWith(prefix)) out.push(m[1] as string);
  }
  return out;
}
