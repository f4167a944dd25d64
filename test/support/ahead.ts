/**
 * Test support: puts the run's head start, which every VM file waits for (the bootable image's
 * DIB build, the saved guest's boot), ahead of the files beside it. This kernel schedules by
 * autogroup: each session shares the CPUs equally with every other session, and a process's
 * nice ranks it only inside its own. QEMU (`-daemonize` calls setsid) and a detached DIB are each
 * a session, so plain `nice` changed nothing measurable; the session's own nice
 * (`/proc/<pid>/autogroup`) does: a CPU loop beside six busy sessions took 1.90 s at 0 and
 * 0.58 s at -10 (0.46 s alone). In a clean-clone run (ci13) the image was built after 936 s
 * and the guest saved after 1,132 s (1,174-1,235 s and 1,419-1,489 s before). The same for
 * every VM file's guests made the run longer (4,256 s, against 3,486-3,644 s): the files that
 * need no cloud then took 2,296 s instead of 960-1,320 s. So only the head start runs ahead.
 */
import { chmod, writeFile } from 'node:fs/promises';

/** The nice given to those sessions. Only root may set a negative one; for others it stays 0. */
const AHEAD_NICE = -10;

/**
 * Sets the nice of `pid`'s session (its autogroup) to AHEAD_NICE. Returns false when that is
 * not possible (not root, the process gone, no autogroup scheduling): the work then runs at the
 * default priority, only slower.
 */
export async function putAhead(pid: number | undefined): Promise<boolean> {
  if (!pid) return false;
  return writeFile(`/proc/${pid}/autogroup`, String(AHEAD_NICE)).then(() => true, () => false);
}

/**
 * Writes `file`, a `qemu-binary:` that runs `qemu` with its arguments and `extraArgs`, and once
 * QEMU has daemonized, puts the session it made (the pid in `-pidfile`) ahead. `qemu` is run
 * by name, so the VM's /proc/<pid>/cmdline starts with qemu-system as the tests look for.
 */
export async function writeQemuAhead(file: string, qemu: string, extraArgs = ''): Promise<string> {
  await writeFile(file, `#!/bin/sh
${qemu} "$@" ${extraArgs} || exit $?
pidfile=; prev=
for a in "$@"; do [ "$prev" = -pidfile ] && pidfile=$a; prev=$a; done
[ -n "$pidfile" ] && [ -f "$pidfile" ] && echo ${AHEAD_NICE} > "/proc/$(cat "$pidfile")/autogroup" 2>/dev/null
exit 0
`);
  await chmod(file, 0o755);
  return file;
}
