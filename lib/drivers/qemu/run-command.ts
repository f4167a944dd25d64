/**
 * The qemu driver's helper programs (qemu-img, genisoimage, qemu) run through lib/run-command.ts,
 * checked: output collected, killed after a time limit (default 60 s) or on abort.
 */
import { runCommand as run, type CommandResult } from '../../run-command.js';

export { CommandFailedError } from '../../errors.js';
export type { CommandResult } from '../../run-command.js';

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  /** Kill after this long (default 60 s). */
  timeoutMs?: number;
  /** Aborting kills the program and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with each stdout chunk (progress). */
  onStdout?(chunk: string): void;
}

/** Runs `cmd args` and resolves with its output when it exits 0. Thrown: CommandFailedError, or the abort reason. */
export function runCommand(cmd: string, args: readonly string[], opts: RunCommandOptions = {}): Promise<CommandResult> {
  return run([cmd, ...args], { ...opts, timeoutMs: opts.timeoutMs ?? 60_000, check: true });
}
