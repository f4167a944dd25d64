/**
 * Test support: free loopback ports, and child processes that are tracked by pid and
 * always stopped (TERM, then KILL) — only processes the test started.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import net from 'node:net';
import { waitFor } from '../../lib/lifecycle.js';

/** Asks the kernel for a free 127.0.0.1 port (bind port 0, read it, close). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
    s.setTimeout(1000, () => { s.destroy(); resolve(false); });
  });
}

/** Waits until 127.0.0.1:port accepts connections. */
export async function waitForPort(port: number, what: string, timeoutMs = 15_000): Promise<void> {
  await waitFor(() => portOpen(port), { timeoutMs, what: `${what} listening on 127.0.0.1:${port}`, intervalMs: 25 });
}

/** A child process started by a test. */
export interface TrackedProcess {
  name: string;
  child: ChildProcess;
  pid: number;
  /** Resolves with the exit code/signal once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  /** TERM, wait up to `graceMs`, then KILL. Idempotent. Kills the process group when detached. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL now (crash injection). */
  kill(): Promise<void>;
}

const running = new Set<TrackedProcess>();

/** Options of {@link startProcess}. */
export interface StartProcessOptions extends SpawnOptions {
  /** Append stdout+stderr to this file. */
  logFile?: string;
}

/** Spawns a tracked child; stdout/stderr go to `logFile` when given, else are ignored. */
export function startProcess(name: string, cmd: string, args: string[], opts: StartProcessOptions = {}): TrackedProcess {
  const { logFile, ...spawnOpts } = opts;
  const child = spawn(cmd, args, { stdio: ['ignore', logFile ? 'pipe' : 'ignore', logFile ? 'pipe' : 'ignore'], ...spawnOpts });
  if (logFile) {
    const out = createWriteStream(logFile, { flags: 'a' });
    child.stdout?.pipe(out, { end: false });
    child.stderr?.pipe(out, { end: false });
    child.once('exit', () => setTimeout(() => out.end(), 50));
  }
  if (child.pid === undefined) throw new Error(`could not start ${name} (${cmd})`);
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => { exitInfo = { code, signal }; resolve(exitInfo); });
    child.once('error', () => { exitInfo = { code: null, signal: null }; resolve(exitInfo); });
  });
  const pid = child.pid;
  const detached = Boolean(spawnOpts.detached);
  const signalIt = (sig: NodeJS.Signals): void => {
    try {
      process.kill(detached ? -pid : pid, sig);
    } catch {
      // already gone
    }
  };
  let stopping: Promise<void> | undefined;
  const p: TrackedProcess = {
    name,
    child,
    pid,
    exited,
    alive: () => exitInfo === undefined,
    stop(graceMs = 10_000) {
      stopping ??= (async () => {
        if (exitInfo === undefined) {
          signalIt('SIGTERM');
          const t = setTimeout(() => signalIt('SIGKILL'), graceMs);
          await exited;
          clearTimeout(t);
        }
        running.delete(p);
      })();
      return stopping;
    },
    async kill() {
      signalIt('SIGKILL');
      await exited;
      running.delete(p);
    },
  };
  running.add(p);
  void exited.then(() => running.delete(p));
  return p;
}

/** Tracked processes still running (for leak assertions in afterEach). */
export function runningProcesses(): TrackedProcess[] {
  return [...running].filter((p) => p.alive());
}

/** Stops every tracked process still running. */
export async function stopAllProcesses(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}
