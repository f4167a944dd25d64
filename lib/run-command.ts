/**
 * The one way this tree runs a program: no shell, output streamed (lines, chunks, a raw copy
 * to a log) and kept (bounded), killed on abort or after a time limit, optionally with its
 * whole process group (DIB forks subshells that outlive a single kill). Used by the builder
 * (build commands, hooks, qemu-img), the qemu driver's helpers and ssh commands.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createReadStream } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { createInterface } from 'node:readline';
import { StringDecoder } from 'node:string_decoder';
import { CommandFailedError } from './errors.js';

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Aborting kills the program (see `killGraceMs`); the result says `aborted`. */
  signal?: AbortSignal;
  /** Kill after this long, ms (default: no limit); the result says `timedOut`. */
  timeoutMs?: number;
  /** Run in a process group of its own and kill the whole group (default false: the program alone). */
  processGroup?: boolean;
  /** On abort or timeout, SIGTERM first and SIGKILL after this long, ms (default: SIGKILL at once). */
  killGraceMs?: number;
  /** Receives every output line (stdout and stderr). */
  onLine?(line: string): void;
  /** Receives each stdout chunk as it comes (progress). */
  onStdout?(chunk: string): void;
  /** Receives the raw output too (e.g. a build log); not ended. */
  output?: NodeJS.WritableStream;
  /** Characters of the combined output kept at its end in `outputTail` (default 2000). */
  tailChars?: number;
  /** A file streamed to the program's stdin (default: none, stdin is /dev/null). */
  stdinFile?: string;
  /**
   * Reject instead of resolving when the program did not exit 0: a {@link CommandFailedError}
   * when it cannot start, runs past `timeoutMs` or exits non-zero; the signal's reason when
   * aborted.
   */
  check?: boolean;
}

/** How the program ended and what it printed. */
export interface CommandResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Killed because the signal aborted. */
  aborted: boolean;
  /** Killed because it ran past `timeoutMs`. */
  timedOut: boolean;
  /** The first MiB or so of stdout. */
  stdout: string;
  /** The first MiB or so of stderr. */
  stderr: string;
  /** The last `tailChars` of stdout and stderr together, as they came. */
  outputTail: string;
}

const MAX_OUTPUT = 1 << 20;

/**
 * Runs `argv` and resolves with how it ended, whatever its exit status (unless `check`).
 * Thrown: the spawn error when it cannot start (a {@link CommandFailedError} with `check`).
 */
export function runCommand(argv: readonly string[], opts: RunCommandOptions = {}): Promise<CommandResult> {
  const [cmd, ...args] = argv;
  const what = `${cmd ?? ''} ${args[0] ?? ''}`;
  return new Promise((resolve, reject) => {
    if (!cmd) return reject(new Error('empty command'));
    if (opts.check && opts.signal?.aborted) return reject(opts.signal.reason as Error);
    const child = spawn(cmd, args, {
      env: opts.env, cwd: opts.cwd, detached: opts.processGroup ?? false, stdio: [opts.stdinFile ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
    if (opts.stdinFile && child.stdin) {
      const input = createReadStream(opts.stdinFile);
      // A program that exits without reading it all closes the pipe: not an error of ours.
      child.stdin.on('error', () => undefined);
      input.on('error', () => child.stdin?.destroy());
      input.pipe(child.stdin);
    }
    const tailChars = opts.tailChars ?? 2000;
    const out = { stdout: '', stderr: '', tail: '' };
    let aborted = false;
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    const kill = (sig: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        if (opts.processGroup) process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        // the group is gone already
      }
    };
    const stop = (): void => {
      if (opts.killGraceMs === undefined) return kill('SIGKILL');
      kill('SIGTERM');
      killTimer ??= setTimeout(() => kill('SIGKILL'), opts.killGraceMs);
    };
    const onAbort = (): void => { aborted = true; stop(); };
    const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => { timedOut = true; stop(); }, Math.max(0, opts.timeoutMs));
    for (const [stream, key] of [[child.stdout, 'stdout'], [child.stderr, 'stderr']] as const) {
      if (opts.output) stream.pipe(opts.output, { end: false });
      if (opts.onLine) createInterface({ input: stream, crlfDelay: Infinity }).on('line', opts.onLine);
      const decoder = new StringDecoder('utf8');
      const keep = (text: string): void => {
        if (!text) return;
        if (out[key].length < MAX_OUTPUT) out[key] += text;
        out.tail = (out.tail + text).slice(-tailChars);
        if (key === 'stdout') opts.onStdout?.(text);
      };
      stream.on('data', (chunk: Buffer) => keep(decoder.write(chunk)));
      stream.on('end', () => keep(decoder.end()));
    }
    const done = (): void => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    child.once('error', (err) => {
      done();
      reject(opts.check ? new CommandFailedError(cmd, null, '', `cannot run ${cmd}: ${err.message}`) : err);
    });
    child.once('close', (exitCode, signal) => {
      done();
      // Stragglers that kept the group alive after the leader exited get the same end.
      if (opts.processGroup && (aborted || timedOut)) kill('SIGKILL');
      const result: CommandResult = { exitCode, signal, aborted, timedOut, stdout: out.stdout, stderr: out.stderr, outputTail: out.tail };
      if (!opts.check) return resolve(result);
      if (aborted) return reject(opts.signal?.reason as Error);
      if (timedOut) return reject(new CommandFailedError(cmd, null, out.stderr, `${what} did not finish within ${opts.timeoutMs} ms`));
      if (exitCode === 0) return resolve(result);
      const why = out.stderr.trim().split('\n').slice(-3).join(' ') || `exit ${exitCode ?? signal}`;
      reject(new CommandFailedError(cmd, exitCode, out.stderr, `${what} failed (${exitCode === null ? `signal ${signal}` : `exit ${exitCode}`}): ${why}`));
    });
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
