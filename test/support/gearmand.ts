/**
 * Test support: a real gearmand on a free 127.0.0.1 port, run in the foreground as a tracked
 * child (so we own its pid), with a readiness probe instead of trusting exit codes or pid files:
 * the port must accept connections and answer the admin `getpid` with our child's pid (another
 * process may take a free port before gearmand binds it; gearmand then retries silently).
 *
 * TLS: Debian's gearmand 1.1.20 accepts `--ssl` and logs "with SSL: true", but its build has no
 * TLS support: it reads the ClientHello as Gearman and drops it with INVALID_MAGIC. So with
 * `tls`, this fixture puts a node:tls terminating proxy on `port` in front of a cleartext
 * gearmand on `plainPort`.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { adminCommand } from '../../lib/gearman/admin.js';
import type { GearmanServerAddress } from '../../lib/gearman/types.js';
import { freePort, startProcess, waitForPort, type TrackedProcess } from './processes.js';

/** Paths of the TLS material for {@link startGearmand}. */
export interface GearmandTlsPaths {
  cert: string;
  key: string;
  /** CA that signed `cert` (clients trust it via `address`); default: `cert` itself (self-signed). */
  ca?: string;
  /** Require a client certificate signed by `clientCa` (PEM file path). */
  clientCa?: string;
}

/** Options of {@link startGearmand}. */
export interface StartGearmandOptions {
  /** `--job-retries`: WORK_FAIL to the client after this many lost workers (1 = gear's semantics). */
  jobRetries?: number;
  /** Serve TLS on `port` (through a node:tls proxy, see the module comment). */
  tls?: GearmandTlsPaths;
  /** `--threads` (default 1: one I/O thread is plenty on loopback and keeps logs readable). */
  threads?: number;
  /** `--verbose` (default INFO, so the log file explains failures). */
  verbose?: 'FATAL' | 'ERROR' | 'WARNING' | 'INFO' | 'DEBUG';
}

/** A running gearmand. */
export interface GearmandHandle {
  host: '127.0.0.1';
  /** Where clients connect (the TLS proxy when `tls` was given). */
  port: number;
  /** gearmand's own cleartext port (same as `port` without TLS); admin tools use it. */
  plainPort: number;
  /** pid of the current gearmand process (changes on restart). */
  readonly pid: number;
  /** `{ host, port, tls? }` ready for the client and worker; with TLS it trusts the fixture's CA. */
  address: GearmanServerAddress;
  /** gearmand's log file. */
  logFile: string;
  /** SIGTERM (then SIGKILL), close the TLS proxy, remove the temp dir. Idempotent; fine after kill(). */
  stop(): Promise<void>;
  /** SIGKILL (crash injection); the temp dir and TLS proxy stay for restart(). */
  kill(): Promise<void>;
  /** Stops gearmand if it runs, then starts a fresh one on the same port. */
  restart(): Promise<void>;
  /** The log file's contents so far (for assertions and failure messages). */
  readLog(): Promise<string>;
}

/** Temp dirs of fixtures not stopped yet; removed at process exit if a test forgot stop(). */
const liveDirs = new Set<string>();
let exitHook = false;

/** Starts gearmand and waits until it accepts connections. */
export async function startGearmand(opts: StartGearmandOptions = {}): Promise<GearmandHandle> {
  const dir = await mkdtemp(path.join(tmpdir(), 'gearmand-'));
  liveDirs.add(dir);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => { for (const d of liveDirs) rmSync(d, { recursive: true, force: true }); });
  }
  let plainPort = 0;
  let logFile = '';
  let args: string[] = [];
  let proc: TrackedProcess | undefined;
  const configure = async (): Promise<void> => {
    plainPort = await freePort();
    logFile = path.join(dir, `gearmand-${plainPort}.log`);
    args = [
      '--listen=127.0.0.1',
      `--port=${plainPort}`,
      `--job-handle-prefix=H:p${plainPort}`,
      `--log-file=${logFile}`,
      `--pid-file=${path.join(dir, 'gearmand.pid')}`,
      `--threads=${opts.threads ?? 1}`,
      `--verbose=${opts.verbose ?? 'INFO'}`,
      ...(opts.jobRetries !== undefined ? [`--job-retries=${opts.jobRetries}`] : []),
    ];
  };
  /** Starts gearmand on `plainPort`; ready once the server there reports *our* pid. */
  const launch = async (): Promise<void> => {
    const p = startProcess(`gearmand:${plainPort}`, '/usr/sbin/gearmand', args, { logFile: path.join(dir, 'stdio.log') });
    proc = p;
    // fail fast with the log when gearmand exits instead of listening (bad flag, port taken…)
    const exitedEarly = p.exited.then(async (e) => {
      throw new Error(`gearmand on port ${plainPort} exited early (${e.code ?? e.signal}): ${await readLogSafe(logFile)}`);
    });
    exitedEarly.catch(() => undefined);
    try {
      await Promise.race([waitForPort(plainPort, 'gearmand', 15_000), exitedEarly]);
      // the port may have been taken between freePort() and gearmand's bind (gearmand then
      // sits in a silent bind-retry loop): make sure the listener is ours
      const [reply] = await adminCommand({ host: '127.0.0.1', port: plainPort }, 'getpid', { timeoutMs: 5000 });
      if (reply !== `OK ${p.pid}`) throw new Error(`port ${plainPort} is served by another process (${reply ?? 'no reply'})`);
    } catch (err) {
      await p.stop(2000);
      throw err;
    }
  };
  // up to three fresh ports (see the port race above)
  let started = false;
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3 && !started; attempt++) {
    await configure();
    try {
      await launch();
      started = true;
    } catch (err) {
      lastError = err;
    }
  }
  if (!started) {
    await rm(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
    throw lastError;
  }

  let proxy: TlsProxy | undefined;
  let caPem: string | undefined;
  if (opts.tls) {
    try {
      caPem = await readFile(opts.tls.ca ?? opts.tls.cert, 'utf8');
      proxy = await startTlsProxy(opts.tls, plainPort);
    } catch (err) {
      await proc?.stop();
      await rm(dir, { recursive: true, force: true });
      liveDirs.delete(dir);
      throw err;
    }
  }
  const port = proxy?.port ?? plainPort;
  let stopping: Promise<void> | undefined;
  return {
    host: '127.0.0.1',
    port,
    plainPort,
    get pid() {
      return (proc as TrackedProcess).pid;
    },
    address: { host: '127.0.0.1', port, ...(caPem ? { tls: { ca: caPem } } : {}) },
    logFile,
    stop() {
      stopping ??= (async () => {
        await proc?.stop(5000);
        await proxy?.close();
        await rm(dir, { recursive: true, force: true });
        liveDirs.delete(dir);
      })();
      return stopping;
    },
    async kill() {
      await proc?.kill();
      proxy?.dropConnections();
    },
    async restart() {
      if (stopping) throw new Error('gearmand fixture already stopped');
      if (proc?.alive()) await proc.stop(5000);
      proxy?.dropConnections();
      await launch();
    },
    readLog: () => readLogSafe(logFile),
  };
}

async function readLogSafe(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return '(no log)';
  }
}

interface TlsProxy {
  port: number;
  dropConnections(): void;
  close(): Promise<void>;
}

/** A TLS terminator on a free port that pipes each connection to 127.0.0.1:backendPort. */
async function startTlsProxy(paths: GearmandTlsPaths, backendPort: number): Promise<TlsProxy> {
  const [cert, key, clientCa] = await Promise.all([
    readFile(paths.cert, 'utf8'),
    readFile(paths.key, 'utf8'),
    paths.clientCa ? readFile(paths.clientCa, 'utf8') : Promise.resolve(undefined),
  ]);
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ cert, key, ...(clientCa ? { ca: clientCa, requestCert: true, rejectUnauthorized: true } : {}) }, (front) => {
    const back = net.connect({ host: '127.0.0.1', port: backendPort });
    back.setNoDelay(true);
    front.setNoDelay(true);
    sockets.add(front);
    sockets.add(back);
    const drop = (): void => {
      front.destroy();
      back.destroy();
      sockets.delete(front);
      sockets.delete(back);
    };
    front.on('error', drop).on('close', drop);
    back.on('error', drop).on('close', drop);
    front.pipe(back);
    back.pipe(front);
  });
  server.on('tlsClientError', () => undefined);
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const dropConnections = (): void => {
    for (const s of sockets) s.destroy();
    sockets.clear();
  };
  return {
    port,
    dropConnections,
    close: () => new Promise<void>((resolve) => {
      dropConnections();
      server.close(() => resolve());
    }),
  };
}

export { testLogger } from './test-log.js';
