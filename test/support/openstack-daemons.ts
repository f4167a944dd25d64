/**
 * Shared plumbing of the loopback clouds (test/support/openstack*.ts): the environment
 * Debian's OpenStack tools need, bounded one-shot commands, HTTP readiness waits, and a
 * group of detached daemons that a watchdog ends if the test process dies without stopping
 * them. See /work/shared/reference/openstack-loopback.md for the reasons behind each choice.
 */
import { appendFile } from 'node:fs/promises';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { sleep } from '../../lib/lifecycle.js';
import { startProcess, type StartProcessOptions, type TrackedProcess } from './processes.js';

/** Debian's binaries only: a pyenv shim ahead of /usr/bin would break every OpenStack tool. */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Debian's Python, which has the OpenStack modules. */
export const PY = '/usr/bin/python3';

/**
 * Daemons run in their own process groups (so a stop reaches forked workers), which also
 * means they outlive a test process that dies without stop(). This watchdog ($1 = our pid,
 * $2 = file of daemon pids) ends their groups within a second or so of that. GNU tail
 * checks the pid every second in-process: a shell loop forking `sleep` and `cat` each
 * second cost 0.2 CPU-s a minute per watchdog.
 */
const WATCHDOG_SH = `tail --pid="$1" -s 1 -f /dev/null
g=$(cat "$2" 2>/dev/null) || true
for p in $g; do kill -TERM "-$p" 2>/dev/null; done
sleep 5
for p in $g; do kill -KILL "-$p" 2>/dev/null; done
`;

/** Debian's binaries and Python only: no pyenv shim, no venv, no OS_* from the caller. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: SYSTEM_PATH, ...extra };
  for (const k of Object.keys(env)) {
    if (k.startsWith('OS_') && !(k in extra)) delete env[k];
  }
  if (!('PYTHONPATH' in extra)) delete env.PYTHONPATH;
  delete env.PYTHONHOME;
  delete env.VIRTUAL_ENV;
  return env;
}

/** The last lines of a log file, for error messages. */
export async function tail(file: string, lines = 30): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Runs a one-shot command to completion (bounded), output appended to `logFile`. */
export async function runOnce(name: string, cmd: string, args: string[], logFile: string,
  opts: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<void> {
  const p = startProcess(name, cmd, args, { env: childEnv(opts.env), logFile, detached: true });
  const timer = setTimeout(() => void p.stop(2000), opts.timeoutMs ?? 120_000);
  const { code, signal } = await p.exited;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${name} failed (exit ${code ?? signal}); ${logFile}:\n${await tail(logFile)}`);
}

function httpAnswers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 2000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/** Waits until `url` answers HTTP at all; fails at once if the daemon died. */
export async function waitHttp(proc: TrackedProcess, url: string, logFile: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await httpAnswers(url))) {
    if (!proc.alive()) throw new Error(`${proc.name} exited before answering on ${url}; ${logFile}:\n${await tail(logFile)}`);
    if (Date.now() > deadline) throw new Error(`${proc.name} did not answer on ${url} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * Detached daemons started together and stopped together (each one's whole process group),
 * guarded by a watchdog that ends them if this process dies first.
 */
export class DaemonGroup {
  readonly processes: TrackedProcess[] = [];
  private readonly watchdog: TrackedProcess;
  private stopping?: Promise<void>;

  /** `pgidFile` records every daemon's pid (= its process group) for the watchdog. */
  constructor(private readonly pgidFile: string) {
    this.watchdog = startProcess('loopback-watchdog', '/bin/sh', ['-c', WATCHDOG_SH, 'watchdog', String(process.pid), pgidFile],
      { env: childEnv(), detached: true });
  }

  /** Starts a daemon in its own process group (stdout+stderr to `logFile`) and tracks it. */
  async start(name: string, cmd: string, args: string[], opts: { logFile: string; env?: Record<string, string> } & Omit<StartProcessOptions, 'env' | 'logFile'>): Promise<TrackedProcess> {
    const { env, ...rest } = opts;
    const p = startProcess(name, cmd, args, { ...rest, env: childEnv(env), detached: true });
    await this.adopt(p);
    return p;
  }

  /** Tracks a process started elsewhere (detached: its pid is its process group). */
  async adopt(p: TrackedProcess): Promise<void> {
    this.processes.push(p);
    await appendFile(this.pgidFile, `${p.pid}\n`);
  }

  /** Stops every daemon (TERM to its group, KILL after `graceMs`) and the watchdog. Idempotent. */
  stop(graceMs?: number): Promise<void> {
    this.stopping ??= (async () => {
      await this.watchdog.stop();
      await Promise.all(this.processes.map((p) => p.stop(graceMs)));
    })();
    return this.stopping;
  }
}
