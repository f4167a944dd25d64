/**
 * Test support: free loopback ports, and child processes that are tracked by pid and
 * always stopped (TERM, then KILL) — only processes the test started.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after } from 'node:test';
import { waitFor } from '../../lib/lifecycle.js';
import { pidAlive } from './pid-alive.js';

/**
 * Where test processes claim the ports they hand out: one file per port holding the claimer's
 * pid, shared by every test process on the machine (and by concurrent runs), so two processes
 * (or two concurrent starts in one) never get the same port. Asking the kernel for port 0 and
 * closing it did not do that: CI ran gearmand and Keystone, started side by side, on the same
 * port (2026-12-02).
 */
const PORT_CLAIMS_DIR = '/tmp/nodepool-test-ports';
const claimedHere = new Set<number>();
/** The range, read once; set with the claims directory and the exit hook at the first call. */
let range: [number, number] | undefined;

/**
 * The range ports are handed out from: below the kernel's ephemeral range, so an outgoing
 * connection's source port never takes a port between our check and the service's bind.
 */
function portRange(): [number, number] {
  const ephemeralLow = Number(/^(\d+)/.exec(readFileSafe('/proc/sys/net/ipv4/ip_local_port_range'))?.[1] ?? 32768);
  return ephemeralLow > 12_000 ? [10_000, ephemeralLow - 1] : [ephemeralLow + 20_000, 65_535];
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Claims `port` for this process: false when a live process holds it. A dead holder's claim is taken over. */
function claimPort(port: number): boolean {
  const file = path.join(PORT_CLAIMS_DIR, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      claimedHere.add(port);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSafe(file));
      if (holder > 0 && pidAlive(holder)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

function releasePort(port: number): void {
  claimedHere.delete(port);
  rmSync(path.join(PORT_CLAIMS_DIR, String(port)), { force: true });
}

/** True when nothing is bound to 127.0.0.1:port (bind, then close). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * A free 127.0.0.1 port no other test process (nor this one) has been handed: claimed on disk
 * for this process's life, and bindable now. The service started on it must bind it soon; a
 * port a foreign process takes meanwhile is caught where services are started (see gearmand.ts, sshd.ts).
 */
export async function freePort(): Promise<number> {
  if (!range) {
    mkdirSync(PORT_CLAIMS_DIR, { recursive: true });
    process.once('exit', () => { for (const port of [...claimedHere]) releasePort(port); });
    range = portRange();
  }
  const [low, high] = range;
  for (let tries = 0; tries < 200; tries++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (claimedHere.has(port) || !claimPort(port)) continue;
    if (await bindable(port)) return port;
    releasePort(port);
  }
  throw new Error(`no free port found in 127.0.0.1:${low}-${high} after 200 tries (claims in ${PORT_CLAIMS_DIR})`);
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
    const streams = [child.stdout, child.stderr].filter((s) => s !== null);
    for (const s of streams) s.pipe(out, { end: false });
    // The log ends once the child's pipes have closed. A process the child started may hold them
    // past its exit (sshd's per-connection processes write to its stderr): 2 s after the exit, what
    // still comes is read and dropped, not written to the ended log (ci36: 'write after end'
    // when the log ended 50 ms after the exit).
    let ended = false;
    const endLog = (): void => {
      if (ended) return;
      ended = true;
      for (const s of streams) {
        s.unpipe(out);
        s.resume();
      }
      out.end();
    };
    child.once('close', endLog);
    child.once('exit', () => setTimeout(endLog, 2_000).unref());
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

/**
 * Starts parts side by side; when one fails, the ones that started are stopped before its error
 * is thrown, so a half-started system leaves nothing running.
 */
export async function startTogether<T extends readonly { stop(): Promise<void> }[]>(starts: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(starts);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failed) return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
  await Promise.allSettled(settled.map((r) => (r.status === 'fulfilled' ? (r.value as { stop(): Promise<void> }).stop() : undefined)));
  throw failed.reason;
}

/**
 * In a test file (under `node --test`): a tracked process still running two minutes after the
 * file's tests and hooks began to end is stopped, named on stderr, and fails the file (exit
 * code 1). Left alone it held the file's process until the 50-minute file timeout (CI,
 * 2026-12-02: a gearmand of a system whose start failed halfway). The check is a timer started
 * by the root's first after-hook (this module registers it before the file's own root hooks,
 * which stop what they started): unref'd, so a file that stopped everything exits at once.
 */
const LEFTOVER_GRACE_MS = 120_000;
if (process.env.NODE_TEST_CONTEXT) {
  after(() => {
    setTimeout(() => {
      const left = runningProcesses();
      if (left.length === 0) return;
      process.exitCode = 1;
      console.error(`# processes still running ${LEFTOVER_GRACE_MS / 1000} s after this file's tests, now stopped: ${left.map((p) => `${p.name}(${p.pid})`).join(', ')}`);
      void stopAllProcesses();
    }, LEFTOVER_GRACE_MS).unref();
  });
}
