/**
 * Waiting for a booting VM's SSH: what a launch (handler.ts) and a build instance
 * (build-instances.ts) both wait for before they use the guest.
 */
import { HostScanError, LaunchError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { keyscan } from '../../ssh/keyscan.js';
import type { FoundVm, VmHost } from './vm-host.js';

/**
 * Longest one SSH connection to a booting guest may stay silent before it is dropped and tried
 * again: QEMU's forward accepts a connection before the guest listens and may then say nothing.
 */
const SSH_SILENCE_MS = 15_000;

/**
 * Key-scans the VM's forwarded port until the guest's sshd answers, within `bootTimeout` s
 * from now, and resolves with its host keys; fails within a second when QEMU exits. The forward
 * accepts TCP before the guest is up, so only a key exchange tells that SSH is there. One scan
 * runs until the deadline: killing ssh-keyscan loses what it has read, and under load (TCG, a
 * busy host) a guest's three key exchanges took longer than any short attempt, so none ever
 * ended in keys. Thrown: LaunchError; the signal's reason when it aborts.
 */
export async function waitForVmSsh(vms: VmHost, vm: FoundVm, opts: { bootTimeout: number; signal: AbortSignal; log: Logger }): Promise<string[]> {
  const id = vm.record.id;
  const exited = new AbortController();
  const checkQemu = async (): Promise<void> => {
    if ((await vms.runningPid(id)) === null) exited.abort(new LaunchError(`QEMU of VM ${id} exited during boot`));
  };
  await checkQemu();
  exited.signal.throwIfAborted();
  const watch = setInterval(() => void checkQemu().catch(() => undefined), 1000);
  opts.log.debug('waiting for the VM to answer SSH', { vm: id, port: vm.record.port, bootTimeout: opts.bootTimeout });
  try {
    return await keyscan('127.0.0.1', vm.record.port, {
      timeoutMs: opts.bootTimeout * 1000, connectTimeoutMs: SSH_SILENCE_MS, retryMs: 1000, signal: AbortSignal.any([opts.signal, exited.signal]),
    });
  } catch (err) {
    if (exited.signal.aborted) throw exited.signal.reason as LaunchError;
    if (!(err instanceof HostScanError)) throw err;
    throw new LaunchError(`VM ${id} did not answer SSH on 127.0.0.1:${vm.record.port} within boot-timeout ${opts.bootTimeout} s (${err.message})`, { cause: err });
  } finally {
    clearInterval(watch);
  }
}
