/**
 * Runs a build command in its own process group (no shell), streams its output line by line,
 * and kills the whole group on abort — DIB forks subshells that outlive a single kill.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  env?: Record<string, string>;
  cwd?: string;
  signal?: AbortSignal;
  /** Receives every output line (stdout and stderr). */
  onLine?(line: string): void;
  /** Receives raw output too (e.g. a build log). */
  output?: NodeJS.WritableStream;
  /** After SIGTERM to the group, SIGKILL follows after this long. */
  killGraceMs?: number;
}

/** How the command ended. */
export interface CommandResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  aborted: boolean;
}

export function runCommand(argv: readonly string[], opts: RunCommandOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = argv;
    if (!cmd) return reject(new Error('empty command'));
    const child = spawn(cmd, args, { env: opts.env, cwd: opts.cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let aborted = false;
    let killTimer: NodeJS.Timeout | undefined;
    const killGroup = (sig: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // the group is gone already
      }
    };
    const onAbort = (): void => {
      aborted = true;
      killGroup('SIGTERM');
      killTimer = setTimeout(() => killGroup('SIGKILL'), opts.killGraceMs ?? 5000);
    };
    for (const stream of [child.stdout, child.stderr]) {
      if (opts.output) stream.pipe(opts.output, { end: false });
      if (opts.onLine) createInterface({ input: stream, crlfDelay: Infinity }).on('line', opts.onLine);
    }
    child.once('error', (err) => {
      opts.signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.once('close', (exitCode, signal) => {
      opts.signal?.removeEventListener('abort', onAbort);
      if (killTimer) clearTimeout(killTimer);
      // Stragglers that kept the group alive after the leader exited get the same end.
      if (aborted) killGroup('SIGKILL');
      resolve({ exitCode, signal, aborted });
    });
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
