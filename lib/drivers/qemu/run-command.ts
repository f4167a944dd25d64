/**
 * Runs a short helper program (qemu-img, genisoimage) to completion: no shell, output
 * collected (bounded), killed on abort or after a time limit.
 */
import { spawn } from 'node:child_process';

/** What a finished command printed. */
export interface CommandResult {
  stdout: string;
  stderr: string;
}

/** Thrown when a helper program cannot start, exits non-zero or runs past its limit. */
export class CommandFailedError extends Error {
  constructor(readonly command: string, readonly exitCode: number | null, readonly stderr: string, message: string) {
    super(message);
    this.name = 'CommandFailedError';
  }
}

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  /** Kill after this long (default 60 s). */
  timeoutMs?: number;
  /** Aborting kills the program and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with each stdout chunk (progress). */
  onStdout?(chunk: string): void;
}

const MAX_OUTPUT = 1 << 20;

/** Runs `cmd args` and resolves with its output when it exits 0. Thrown: {@link CommandFailedError}, or the abort reason. */
export function runCommand(cmd: string, args: readonly string[], opts: RunCommandOptions = {}): Promise<CommandResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(opts.signal.reason as Error);
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
    const onAbort = (): void => { child.kill('SIGKILL'); };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      if (stdout.length < MAX_OUTPUT) stdout += c;
      opts.onStdout?.(c);
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { if (stderr.length < MAX_OUTPUT) stderr += c; });
    const done = (): void => { clearTimeout(timer); opts.signal?.removeEventListener('abort', onAbort); };
    child.once('error', (err) => {
      done();
      reject(new CommandFailedError(cmd, null, '', `cannot run ${cmd}: ${err.message}`));
    });
    child.once('close', (code, sig) => {
      done();
      if (opts.signal?.aborted) return reject(opts.signal.reason as Error);
      if (timedOut) return reject(new CommandFailedError(cmd, null, stderr, `${cmd} ${args[0] ?? ''} did not finish within ${timeoutMs} ms`));
      if (code === 0) return resolve({ stdout, stderr });
      const why = stderr.trim().split('\n').slice(-3).join(' ') || `exit ${code ?? sig}`;
      reject(new CommandFailedError(cmd, code, stderr, `${cmd} ${args[0] ?? ''} failed (${code === null ? `signal ${sig}` : `exit ${code}`}): ${why}`));
    });
  });
}
