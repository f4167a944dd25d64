/**
 * A provider's `post-upload-hook` (Nodepool 11): a script the builder runs after an upload
 * finished and its bytes were verified, before the job reports success, as
 * `<script> <provider> <external-id> <local-file>` (the local file is the one uploaded, in the
 * format uploaded). Exit 0 passes; anything else (an exit code, a signal, a timeout, a script
 * that cannot start) fails the upload, and the caller deletes the image it just made.
 *
 * The script runs without a shell in its own process group, which is killed on timeout or
 * abort; its output goes line by line into the job's log, and its tail into the failure.
 * The argv, the tail and the verdict are pure.
 */
import { coerceError, PostUploadHookError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { runCommand, type CommandResult } from '../../lib/run-command.js';
import { BUILDER_DEFAULTS } from './builder-defaults.js';

/** Lines of output kept for a failure message. */
export const HOOK_TAIL_LINES = 20;
/** Characters of output kept for a failure message (the end of the tail wins). */
export const HOOK_TAIL_CHARS = 2000;
/** Output lines copied into the log per run; the rest are counted, not logged. */
export const HOOK_LOG_LINES = 1000;

/** What the hook is called with. */
export interface HookCall {
  /** The hook's absolute path (`post-upload-hook`). */
  script: string;
  /** The provider's name. */
  provider: string;
  /** The cloud's id of the image just uploaded. */
  externalId: string;
  /** The local file that was uploaded. */
  file: string;
}

/** `<SCRIPT> <PROVIDER> <EXTERNAL_IMAGE_ID> <LOCAL_IMAGE_FILENAME>`, as Nodepool 11 calls it. Pure. */
export function postUploadHookArgv(call: HookCall): string[] {
  return [call.script, call.provider, call.externalId, call.file];
}

/** The last lines of a command's output, bounded in lines and characters. */
export class OutputTail {
  private readonly lines: string[] = [];
  private count = 0;

  constructor(private readonly maxLines = HOOK_TAIL_LINES, private readonly maxChars = HOOK_TAIL_CHARS) {}

  /** Lines seen in all. */
  get total(): number {
    return this.count;
  }

  push(line: string): void {
    this.count++;
    this.lines.push(line);
    if (this.lines.length > this.maxLines) this.lines.shift();
  }

  /** The kept lines, trailing blank ones dropped; cut at the front to `maxChars` (marked `…`). */
  text(): string {
    const lines = [...this.lines];
    while (lines.length > 0 && lines[lines.length - 1]?.trim() === '') lines.pop();
    const all = lines.join('\n');
    return all.length <= this.maxChars ? all : `…${all.slice(all.length - this.maxChars + 1)}`;
  }
}

/** How a hook run ended, as {@link hookVerdict} reads it. */
export interface HookRun {
  /** The command's end; undefined when it could not be started. */
  result?: Pick<CommandResult, 'exitCode' | 'signal' | 'aborted'>;
  /** Why it could not be started (spawn's error). */
  startError?: Error;
  /** It ran past its timeout and was killed. */
  timedOut: boolean;
  /** Its output tail ({@link OutputTail.text}). */
  tail: string;
}

/** The hook passed, or why it failed (the failure message, tail included). */
export type HookVerdict = { ok: true } | { ok: false; message: string; exitCode: number | null; signal: string | null; timedOut: boolean };

/**
 * Decides a hook run: exit 0 (and not timed out or aborted) passes, anything else fails with
 * `post-upload-hook <script> exited 3: <tail>` or its like. Pure.
 */
export function hookVerdict(script: string, run: HookRun, timeoutS: number): HookVerdict {
  const withTail = (head: string): string => (run.tail ? `${head}: ${run.tail}` : `${head} (no output)`);
  const fail = (head: string, exitCode: number | null = null, signal: string | null = null): HookVerdict =>
    ({ ok: false, message: withTail(head), exitCode, signal, timedOut: run.timedOut });
  if (run.startError || !run.result) return fail(`post-upload-hook ${script} could not be started (${run.startError?.message ?? 'unknown error'})`);
  const { exitCode, signal, aborted } = run.result;
  if (run.timedOut) return fail(`post-upload-hook ${script} did not finish within ${timeoutS} s (image-upload-timeout) and was killed`, exitCode, signal);
  if (aborted) return fail(`post-upload-hook ${script} was killed: the builder is shutting down`, exitCode, signal);
  if (exitCode === 0) return { ok: true };
  if (exitCode === null) return fail(`post-upload-hook ${script} was killed by ${signal ?? 'a signal'}`, null, signal);
  return fail(`post-upload-hook ${script} exited ${exitCode}`, exitCode, signal);
}

/** Options of {@link runPostUploadHook}. */
export interface RunHookOptions {
  /** Seconds the hook may run before its process group is killed. */
  timeoutS: number;
  /** Aborts the hook (builder shutdown, job cancelled). */
  signal: AbortSignal;
  log: Logger;
  /** The hook's environment; undefined: the builder's own. */
  env?: Record<string, string>;
  /** After SIGTERM to the hook's group, SIGKILL follows after this long (default 5 s). */
  killGraceMs?: number;
}

/**
 * Runs the hook and resolves when it exited 0; its output lines go to `log` (info).
 * Thrown: {@link PostUploadHookError} otherwise, with the tail of its output.
 */
export async function runPostUploadHook(call: HookCall, opts: RunHookOptions): Promise<void> {
  const argv = postUploadHookArgv(call);
  const timeout = AbortSignal.timeout(opts.timeoutS * 1000);
  const tail = new OutputTail();
  const log = opts.log.child({ hook: call.script });
  const started = Date.now();
  log.info('post-upload-hook started', { argv });
  const run: HookRun = { timedOut: false, tail: '' };
  try {
    run.result = await runCommand(argv, {
      ...(opts.env ? { env: opts.env } : {}),
      signal: AbortSignal.any([opts.signal, timeout]),
      killGraceMs: opts.killGraceMs ?? BUILDER_DEFAULTS.helperKillGraceMs,
      processGroup: true,
      onLine: (line) => {
        tail.push(line);
        if (tail.total <= HOOK_LOG_LINES) log.info('post-upload-hook output', { line });
      },
    });
  } catch (err) {
    run.startError = coerceError(err);
  }
  run.timedOut = timeout.aborted && !opts.signal.aborted;
  run.tail = tail.text();
  const verdict = hookVerdict(call.script, run, opts.timeoutS);
  const summary = { durationMs: Date.now() - started, outputLines: tail.total, ...(tail.total > HOOK_LOG_LINES ? { linesNotLogged: tail.total - HOOK_LOG_LINES } : {}) };
  if (verdict.ok) {
    log.info('post-upload-hook passed', summary);
    return;
  }
  log.warn('post-upload-hook failed', { ...summary, exitCode: verdict.exitCode, signal: verdict.signal, timedOut: verdict.timedOut });
  throw new PostUploadHookError(verdict.message, verdict, run.startError ? { cause: run.startError } : undefined);
}
