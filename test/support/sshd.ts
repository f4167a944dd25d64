/**
 * Test support: a real OpenSSH server on loopback, run in the foreground (`sshd -D -e`) as a
 * tracked child with its own config and host keys (made by ssh-keygen in a temp dir), so a
 * static host's registration does a real key exchange. A fixture may listen on many
 * `address:port` pairs (benchmarks want hundreds of static slots cheaply): sshd takes at most
 * 16 listen sockets, so every 16 addresses get one sshd process, all with the same keys. It
 * is ready when the log says "Server listening on" for every address, so a port taken by
 * someone else is an error, not a silent gap. No PAM, no password logins, no pid file; MaxStartups is
 * raised so parallel key scans are not dropped.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor } from '../../lib/lifecycle.js';
import { tcpProbe } from '../../lib/ssh/tcp-probe.js';
import { freePort, startProcess, type TrackedProcess } from './processes.js';

/** Key types ssh-keygen makes for the fixture (rsa is slower to generate). */
export type SshdKeyType = 'ed25519' | 'ecdsa' | 'rsa';

/** Options of {@link startSshd}. */
export interface StartSshdOptions {
  /** Loopback address to listen on (default 127.0.0.1); ignored when `addresses` is given. */
  host?: string;
  /** Port (default: a free one); ignored when `addresses` is given. */
  port?: number;
  /** Listen on all these `host:port` pairs instead (one process, many static slots). */
  addresses?: string[];
  /** Host key types (default ed25519 and ecdsa). */
  keyTypes?: SshdKeyType[];
  /** Milliseconds to wait for every listener (default 15 s). */
  timeoutMs?: number;
  /**
   * false: `sshd -r`, no re-exec per connection. Each connection then costs a fork instead of
   * a fork and an exec (measured here: 1,300 instead of 270 connects/s); benchmarks that stand
   * in for many hosts on one machine use it so the hosts' CPU is not billed to the launcher.
   */
  reexec?: boolean;
}

/** One listening address. */
export interface SshdAddress {
  host: string;
  port: number;
}

/** A running sshd. */
export interface SshdHandle {
  /** The first listening address (the only one unless `addresses` was given). */
  host: string;
  port: number;
  addresses: readonly SshdAddress[];
  /** Public host keys as `"<type> <base64>"`, sorted. */
  hostKeys: readonly string[];
  /** The public key of one type. */
  hostKey(type: SshdKeyType): string;
  /** pids of the running sshd processes, one per {@link MAX_LISTENERS} addresses (change on restart). */
  readonly pids: readonly number[];
  /** True while every sshd process runs. */
  readonly running: boolean;
  logFile: string;
  /** Stops sshd (TERM, then KILL) and returns once its addresses refuse connects; keeps config and keys for restart(). Idempotent. */
  pause(): Promise<void>;
  /** Starts sshd again on the same addresses with the same keys (stops it first if running). */
  restart(): Promise<void>;
  /** Stops sshd and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  readLog(): string;
}

const SSHD = '/usr/sbin/sshd';
/** sshd's compiled-in MAX_LISTEN_SOCKS: more addresses are spread over several processes. */
export const MAX_LISTENERS = 16;
const KEY_NAME: Record<SshdKeyType, string> = { ed25519: 'ssh-ed25519', ecdsa: 'ecdsa-sha2-nistp256', rsa: 'ssh-rsa' };

/** Directories of fixtures not stopped yet; removed at exit if a test forgot stop(). */
const liveDirs = new Set<string>();
let exitHook = false;

function parseAddress(a: string): SshdAddress {
  const m = /^(.+):(\d+)$/.exec(a);
  if (!m) throw new Error(`sshd address ${JSON.stringify(a)}: expected host:port`);
  return { host: m[1] as string, port: Number(m[2]) };
}

function sshdConfig(dir: string, addresses: readonly SshdAddress[], keyTypes: readonly SshdKeyType[]): string {
  return [
    ...addresses.map((a) => `ListenAddress ${a.host}:${a.port}`),
    ...keyTypes.map((t) => `HostKey ${path.join(dir, `ssh_host_${t}_key`)}`),
    'PidFile none',
    'UsePAM no',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PermitRootLogin no',
    'StrictModes no',
    `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
    'MaxStartups 10000',
    'LoginGraceTime 10',
    'LogLevel INFO',
    '',
  ].join('\n');
}

/** Starts sshd and waits until it listens on every address. */
export async function startSshd(opts: StartSshdOptions = {}): Promise<SshdHandle> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sshd-'));
  liveDirs.add(dir);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => { for (const d of liveDirs) rmSync(d, { recursive: true, force: true }); });
  }
  // sshd insists on its privilege separation directory even for a foreground test server.
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const keyTypes = opts.keyTypes ?? ['ed25519', 'ecdsa'];
  const keys = new Map<SshdKeyType, string>();
  for (const t of keyTypes) {
    const file = path.join(dir, `ssh_host_${t}_key`);
    execFileSync('ssh-keygen', ['-q', '-t', t, '-N', '', '-C', '', '-f', file]);
    const [type, blob] = readFileSync(`${file}.pub`, 'utf8').trim().split(/\s+/);
    keys.set(t, `${type} ${blob}`);
  }
  const fixedAddresses = opts.addresses?.map(parseAddress);
  const host = opts.host ?? '127.0.0.1';
  let addresses: SshdAddress[] = fixedAddresses ?? [{ host, port: opts.port ?? await freePort() }];
  const logFile = path.join(dir, 'sshd.log');
  let procs: TrackedProcess[] = [];
  /** One sshd per group of at most MAX_LISTENERS addresses, all with the same keys. */
  const launch = async (): Promise<void> => {
    writeFileSync(logFile, '');
    const groups: SshdAddress[][] = [];
    for (let i = 0; i < addresses.length; i += MAX_LISTENERS) groups.push(addresses.slice(i, i + MAX_LISTENERS));
    procs = groups.map((group, g) => {
      const configFile = path.join(dir, `sshd_config.${g}`);
      writeFileSync(configFile, sshdConfig(dir, group, keyTypes));
      return startProcess('sshd', SSHD, ['-D', '-e', ...(opts.reexec === false ? ['-r'] : []), '-f', configFile], { logFile });
    });
    const want = addresses.map((a) => `Server listening on ${a.host} port ${a.port}.`);
    const died = Promise.race(procs.map((p) => p.exited)).then(() => {
      throw new Error(`sshd exited: ${readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' / ')}`);
    });
    died.catch(() => undefined);
    await Promise.race([died, waitFor(() => {
      const log = readFileSync(logFile, 'utf8');
      if (/Bind to port \d+ on \S+ failed/.test(log)) throw new Error(`sshd could not bind: ${log.trim()}`);
      return want.every((line) => log.includes(line));
    }, { timeoutMs: opts.timeoutMs ?? 15_000, what: `sshd listening on ${addresses.length} address(es), first ${addresses[0]?.host}:${addresses[0]?.port}`, intervalMs: 25 })]);
  };
  const stopAll = async (): Promise<void> => { await Promise.all(procs.map((p) => p.stop(5_000))); };
  /**
   * Stops sshd and returns once every address refuses connects. A child sshd forked for a
   * connect just before the stop holds a copy of the listen socket until it first runs and
   * closes it; until then connects still succeed into the backlog (seen under load: a liveness
   * check 241 ms into a case answered after the pause).
   */
  const stopUntilRefused = async (): Promise<void> => {
    await stopAll();
    for (const a of addresses) {
      await waitFor(() => refused(a), { timeoutMs: 15_000, intervalMs: 25, what: `sshd's listen socket on ${a.host}:${a.port} to close after its stop` });
    }
  };
  // A free port can be taken between freePort() and sshd's bind: pick another (own ports only).
  for (let attempt = 0; ; attempt++) {
    try {
      await launch();
      break;
    } catch (err) {
      await stopAll();
      if (fixedAddresses || opts.port !== undefined || attempt >= 3) {
        liveDirs.delete(dir);
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
      addresses = [{ host, port: await freePort() }];
    }
  }

  const first = addresses[0] as SshdAddress;
  let stopped: Promise<void> | undefined;
  const handle: SshdHandle = {
    host: first.host,
    port: first.port,
    addresses,
    hostKeys: [...keys.values()].sort(),
    hostKey(type) {
      const k = keys.get(type);
      if (!k) throw new Error(`sshd fixture has no ${KEY_NAME[type]} key`);
      return k;
    },
    get pids() { return procs.map((p) => p.pid); },
    get running() { return procs.length > 0 && procs.every((p) => p.alive()); },
    logFile,
    pause: stopUntilRefused,
    async restart() {
      if (stopped) throw new Error('sshd fixture already stopped');
      await stopUntilRefused();
      await launch();
    },
    stop() {
      stopped ??= (async () => {
        await stopAll();
        liveDirs.delete(dir);
        rmSync(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
    readLog: () => readFileSync(logFile, 'utf8'),
  };
  return handle;
}

/** Whether a TCP connect to the address is refused (an answer or a stall is not). */
async function refused(a: SshdAddress): Promise<boolean> {
  const probe = await tcpProbe(a.host, a.port, 2_000);
  return !probe.ok && probe.reason === 'connection refused';
}
