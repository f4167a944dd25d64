/**
 * Test support: puts the work every VM file waits for (the bootable image's DIB build, the saved
 * guest's boot, a boot that is a test's subject, the real DIB build) ahead of the many short
 * files beside it. This kernel schedules by autogroup: each session shares the CPUs equally
 * with every other session, and a process's nice ranks it only inside its own. The daemons of
 * the loopback clouds, QEMU (`-daemonize` calls setsid) and DIB (run in a process group of its
 * own) are each a session, so `nice` changed nothing measurable; the session's own nice
 * (`/proc/<pid>/autogroup`) does: a CPU loop beside six busy sessions took 1.90 s at 0 and
 * 0.58 s at -10 (0.46 s alone).
 */
import { chmod, writeFile } from 'node:fs/promises';

/** The nice given to those sessions. Only root may set a negative one; for others it stays 0. */
export const AHEAD_NICE = -10;

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

/** Writes `file`, a `dib-cmd:` that puts its own session (the builder starts DIB in one) ahead and runs `dib`. */
export async function writeDibAhead(file: string, dib: string): Promise<string> {
  await writeFile(file, `#!/bin/sh\necho ${AHEAD_NICE} > /proc/$$/autogroup 2>/dev/null\nexec ${dib} "$@"\n`);
  await chmod(file, 0o755);
  return file;
}
