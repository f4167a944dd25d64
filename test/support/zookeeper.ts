/**
 * Test support: Debian's ZooKeeper 3.8 on a free 127.0.0.1 port, and real session expiry.
 *
 * - {@link startZooKeeper} runs `java … QuorumPeerMain zoo.cfg` directly (no zkServer.sh: no
 *   JMX, no admin server, no /var/log) as a tracked child with a private data dir; ready once
 *   `srvr` says `Mode: standalone` and `conf` names our data dir (so the port is ours). With
 *   `tls`, a second, mutual-TLS listener runs on `tlsPort` with PEM material made by openssl.
 *   tickTime defaults to 200 ms, so a session can expire in 400 ms; maxSessionTimeout defaults
 *   to 60 s so a store asking for a longer TTL gets what it asked for.
 * - {@link FreezeProxy} sits between clients and the server. It learns each connection's
 *   session id from the ConnectRequest/ConnectResponse and can freeze one session (its
 *   sockets stop moving and its reconnects are refused) or every connection.
 * - {@link expireSession} makes ZooKeeper itself expire a client's session, deterministically:
 *   freeze that session in the proxy, attach a second client with the same id and password
 *   straight to the server and close it (the server ends the session and deletes its ephemeral
 *   znodes), then thaw: the client reconnects and is told EXPIRED.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import zookeeper from 'node-zookeeper-client';
import { waitFor } from '../../lib/lifecycle.js';
import { freePort, startProcess, type TrackedProcess } from './processes.js';

const execFileP = promisify(execFile);

const JARS = ['zookeeper.jar', 'slf4j-api.jar', 'slf4j-simple.jar', 'netty-codec.jar']
  .map((j) => `/usr/share/java/${j}`);

/** Options of {@link startZooKeeper}. */
export interface StartZooKeeperOptions {
  /** ZooKeeper's tick (default 200 ms; the shortest session timeout is two ticks). */
  tickTimeMs?: number;
  /** Longest session timeout the server grants (default 60,000 ms). */
  maxSessionTimeoutMs?: number;
  /** Also serve mutual TLS on `tlsPort` (certificates made with openssl in the temp dir). */
  tls?: boolean;
  /** fsync every write (default false: tests need no durability against power loss). */
  forceSync?: boolean;
}

/** PEM files of the TLS listener: a client certificate signed by the same CA the server trusts. */
export interface ZooKeeperTlsFiles {
  ca: string;
  cert: string;
  key: string;
}

/** A running ZooKeeper. */
export interface ZooKeeperHandle {
  host: '127.0.0.1';
  port: number;
  /** The mutual-TLS port (only with `tls`). */
  tlsPort?: number;
  /** Client certificate, key and CA (only with `tls`). */
  tlsFiles?: ZooKeeperTlsFiles;
  /** `127.0.0.1:<port>`. */
  connectString: string;
  /** pid of the current java process (changes on restart). */
  readonly pid: number;
  dataDir: string;
  /** The output of a four-letter command (`srvr`, `stat`, `mntr`, `ruok`, `conf`). */
  fourLetter(cmd: string): Promise<string>;
  /** SIGTERM (SIGKILL after 5 s), then removes the temp dir. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL now (crash injection); the data stays for restart(). */
  kill(): Promise<void>;
  /** Stops the server if it runs (SIGTERM) and starts it again on the same ports and data. */
  restart(): Promise<void>;
  readLog(): Promise<string>;
}

/** Temp dirs of servers not stopped yet; removed at exit if a test forgot stop(). */
const liveDirs = new Set<string>();
let exitHook = false;

/** Starts ZooKeeper and waits until it serves sessions. */
export async function startZooKeeper(opts: StartZooKeeperOptions = {}): Promise<ZooKeeperHandle> {
  const dir = await mkdtemp(path.join(tmpdir(), 'zookeeper-'));
  liveDirs.add(dir);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => { for (const d of liveDirs) rmSync(d, { recursive: true, force: true }); });
  }
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'zookeeper.log');
  const cfgFile = path.join(dir, 'zoo.cfg');
  try {
    await mkdir(dataDir);
    const tlsFiles = opts.tls ? await makeCertificates(path.join(dir, 'tls')) : undefined;
    let port = 0;
    let tlsPort: number | undefined;
    let proc: TrackedProcess | undefined;
    const writeConfig = async (): Promise<void> => {
      const tick = opts.tickTimeMs ?? 200;
      const lines = [
        `tickTime=${tick}`,
        `dataDir=${dataDir}`,
        `clientPort=${port}`,
        'clientPortAddress=127.0.0.1',
        'maxClientCnxns=0',
        `minSessionTimeout=${2 * tick}`,
        `maxSessionTimeout=${opts.maxSessionTimeoutMs ?? 60_000}`,
        'admin.enableServer=false',
        '4lw.commands.whitelist=ruok,srvr,stat,mntr,conf',
        `forceSync=${opts.forceSync ? 'yes' : 'no'}`,
      ];
      if (tlsFiles && tlsPort !== undefined) {
        const dirTls = path.dirname(tlsFiles.ca);
        lines.push(
          `secureClientPort=${tlsPort}`,
          'secureClientPortAddress=127.0.0.1',
          'serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory',
          `ssl.keyStore.location=${path.join(dirTls, 'server.pem')}`,
          'ssl.keyStore.type=PEM',
          `ssl.trustStore.location=${tlsFiles.ca}`,
          'ssl.trustStore.type=PEM',
          'ssl.clientAuth=need',
        );
      }
      await writeFile(cfgFile, `${lines.join('\n')}\n`);
    };
    const launch = async (): Promise<void> => {
      const p = startProcess(`zookeeper:${port}`, '/usr/bin/java', [
        '-Xmx64m', '-XX:+UseSerialGC', '-XX:-UsePerfData', '-Dzookeeper.jmx.log4j.disable=true',
        '-cp', ['/etc/zookeeper/conf', ...JARS].join(':'),
        'org.apache.zookeeper.server.quorum.QuorumPeerMain', cfgFile,
      ], { logFile });
      proc = p;
      try {
        await waitFor(async () => {
          if (!p.alive()) throw new Error(`ZooKeeper exited early: ${(await readLogSafe(logFile)).slice(-2000)}`);
          const srvr = await fourLetter(port, 'srvr').catch(() => '');
          if (!srvr.includes('Mode: standalone')) return false;
          // the port may belong to another server started between freePort() and our bind
          const conf = await fourLetter(port, 'conf').catch(() => '');
          if (!conf.includes(`dataDir=${dataDir}`)) throw new Error(`port ${port} is served by another ZooKeeper`);
          return true;
        }, { timeoutMs: 30_000, what: `ZooKeeper on 127.0.0.1:${port} to serve`, intervalMs: 50 });
        if (tlsPort !== undefined) await waitFor(() => portAccepts(tlsPort as number), { timeoutMs: 10_000, what: 'the TLS port', intervalMs: 50 });
      } catch (err) {
        await p.stop(2000);
        throw err;
      }
    };
    let lastError: unknown;
    for (let attempt = 1; attempt <= 3 && proc?.alive() !== true; attempt++) {
      port = await freePort();
      tlsPort = tlsFiles ? await freePort() : undefined;
      await writeConfig();
      try {
        await launch();
      } catch (err) {
        lastError = err;
      }
    }
    if (proc?.alive() !== true) throw lastError;

    let stopping: Promise<void> | undefined;
    return {
      host: '127.0.0.1',
      port,
      ...(tlsPort !== undefined ? { tlsPort } : {}),
      ...(tlsFiles ? { tlsFiles } : {}),
      connectString: `127.0.0.1:${port}`,
      get pid() { return (proc as TrackedProcess).pid; },
      dataDir,
      fourLetter: (cmd) => fourLetter(port, cmd),
      stop() {
        stopping ??= (async () => {
          await proc?.stop(5000);
          await rm(dir, { recursive: true, force: true });
          liveDirs.delete(dir);
        })();
        return stopping;
      },
      async kill() {
        await proc?.kill();
      },
      async restart() {
        if (stopping) throw new Error('ZooKeeper fixture already stopped');
        if (proc?.alive()) await proc.stop(5000);
        await launch();
      },
      readLog: () => readLogSafe(logFile),
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
    throw err;
  }
}

/** Sends a four-letter command and returns the whole answer. */
export function fourLetter(port: number, cmd: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port });
    let out = '';
    s.setTimeout(timeoutMs, () => s.destroy(new Error(`${cmd}: no answer in ${timeoutMs} ms`)));
    s.on('connect', () => s.write(cmd));
    s.on('data', (d: Buffer) => { out += d.toString(); });
    s.on('error', reject);
    s.on('close', () => resolve(out));
  });
}

function portAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

async function readLogSafe(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return '(no log)';
  }
}

/** A CA, a server certificate for 127.0.0.1/localhost (server.pem = key + cert) and a client certificate. */
async function makeCertificates(dir: string): Promise<ZooKeeperTlsFiles> {
  await mkdir(dir, { recursive: true });
  const ssl = (...args: string[]): Promise<unknown> => execFileP('openssl', args, { cwd: dir });
  await ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=zk-test-ca');
  for (const n of ['server', 'client']) {
    await ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${n}.key`, '-out', `${n}.csr`, '-subj', `/CN=${n}`);
    await writeFile(path.join(dir, `${n}.ext`), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
    await ssl('x509', '-req', '-in', `${n}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${n}.crt`, '-days', '2', '-extfile', `${n}.ext`);
  }
  const [key, crt] = await Promise.all([readFile(path.join(dir, 'server.key'), 'utf8'), readFile(path.join(dir, 'server.crt'), 'utf8')]);
  await writeFile(path.join(dir, 'server.pem'), key + crt);
  return { ca: path.join(dir, 'ca.crt'), cert: path.join(dir, 'client.crt'), key: path.join(dir, 'client.key') };
}

/** Request opcodes of the ZooKeeper protocol (for {@link FreezeProxy.freezeOnRequest}). */
export const OPCODE = { create: 1, delete: 2, exists: 3, getData: 4, setData: 5, getChildren2: 12, multi: 14, addWatch: 106 } as const;

/** One proxied connection and the session it carries (hex, once known). */
interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  session: string | undefined;
  /** Frozen by a request trigger. */
  held: boolean;
  /** Held with `requestsPass`: later requests still reach the server (its replies stay held). */
  requestsPass?: boolean;
}

/**
 * A loopback TCP proxy in front of ZooKeeper that can freeze connections: a frozen
 * connection's sockets are paused (the client sees silence, as in a partition) and new
 * connections of a frozen session are refused.
 */
export class FreezeProxy {
  private readonly pairs = new Set<Pair>();
  private readonly frozenSessions = new Set<string>();
  private frozenAll = false;
  private trigger: { opcode: number; when: 'before' | 'after'; requestsPass?: boolean } | undefined;

  private constructor(private readonly server: net.Server, readonly port: number, private readonly target: number) {}

  /** Starts a proxy on a free 127.0.0.1 port towards 127.0.0.1:`targetPort`. */
  static async start(targetPort: number): Promise<FreezeProxy> {
    const server = net.createServer((c) => proxy.accept(c));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const addr = server.address();
    const proxy = new FreezeProxy(server, typeof addr === 'object' && addr ? addr.port : 0, targetPort);
    return proxy;
  }

  /** Session ids (hex) of the connections open now. */
  sessions(): string[] {
    return [...this.pairs].map((p) => p.session).filter((s): s is string => s !== undefined);
  }

  /**
   * Freezes one session's connections (hex id), or every connection when none is named.
   * `repliesOnly`: requests still reach the server, its answers are held back (a write that
   * applied but whose reply was lost).
   */
  freeze(sessionHex?: string, opts: { repliesOnly?: boolean } = {}): void {
    if (sessionHex === undefined) this.frozenAll = true;
    else this.frozenSessions.add(sessionHex);
    for (const p of this.pairs) {
      if (!this.isFrozen(p)) continue;
      p.upstream.pause();
      if (!opts.repliesOnly) p.client.pause();
    }
  }

  /**
   * Freezes the connection that next sends a request with `opcode`: `before` holds that
   * request back (the server never sees it), `after` lets it through and holds back the
   * replies (it applies, its answer is lost). Cut with {@link thaw}. `requestsPass` (with
   * `after`): the connection's later requests, pings included, still reach the server, so it
   * keeps the session while the client hears nothing.
   */
  freezeOnRequest(opcode: number, when: 'before' | 'after', opts: { requestsPass?: boolean } = {}): void {
    this.trigger = { opcode, when, requestsPass: opts.requestsPass };
  }

  /** Ends the freeze: frozen connections are cut (their clients reconnect) and new ones pass again. */
  thaw(): void {
    for (const p of [...this.pairs]) {
      if (this.isFrozen(p)) this.drop(p);
    }
    this.frozenAll = false;
    this.frozenSessions.clear();
    this.trigger = undefined;
  }

  /** Cuts every connection now (a connection loss without expiry: clients reconnect). */
  dropAll(): void {
    for (const p of [...this.pairs]) this.drop(p);
  }

  /** Cuts every connection and stops listening. */
  close(): Promise<void> {
    this.dropAll();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private isFrozen(p: Pair): boolean {
    return p.held || this.frozenAll || (p.session !== undefined && this.frozenSessions.has(p.session));
  }

  private drop(p: Pair): void {
    p.client.destroy();
    p.upstream.destroy();
    this.pairs.delete(p);
  }

  private accept(client: net.Socket): void {
    if (this.frozenAll) { client.destroy(); return; }
    const upstream = net.connect({ host: '127.0.0.1', port: this.target });
    const p: Pair = { client, upstream, session: undefined, held: false };
    this.pairs.add(p);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    for (const s of [client, upstream]) s.on('error', () => this.drop(p)).on('close', () => this.drop(p));
    // ConnectRequest: len, protocolVersion, lastZxidSeen (8), timeOut, sessionId (8) at offset 20.
    this.forward(client, upstream, 28, (head) => {
      const id = head.subarray(20, 28).toString('hex');
      if (id !== '0000000000000000') p.session = id;
      if (this.isFrozen(p)) { this.drop(p); return false; }
      return true;
    }, (packet) => this.onRequest(p, packet));
    // ConnectResponse: len, protocolVersion, timeOut, sessionId (8) at offset 12.
    this.forward(upstream, client, 20, (head) => {
      p.session = head.subarray(12, 20).toString('hex');
      return true;
    });
  }

  /** Whether a request packet (after the connect request) passes; applies the request trigger. */
  private onRequest(p: Pair, packet: Buffer): boolean {
    const t = this.trigger;
    if (p.held) return p.requestsPass === true;
    if (!t || packet.length < 12 || packet.readInt32BE(8) !== t.opcode) return true;
    this.trigger = undefined;
    p.held = true;
    p.requestsPass = t.when === 'after' && t.requestsPass === true;
    p.upstream.pause();
    if (t.when === 'before') { p.client.pause(); return false; }
    return true;
  }

  /**
   * Pipes `from` to `to`, handing the first `headBytes` to `onHead` before they pass; with
   * `onPacket`, the rest is cut into length-prefixed packets, each passed only when it says so.
   */
  private forward(from: net.Socket, to: net.Socket, headBytes: number, onHead: (head: Buffer) => boolean, onPacket?: (packet: Buffer) => boolean): void {
    let head: Buffer | undefined = Buffer.alloc(0);
    let rest = Buffer.alloc(0);
    const send = (d: Buffer): void => {
      if (!onPacket) { if (!to.destroyed) to.write(d); return; }
      rest = Buffer.concat([rest, d]);
      while (rest.length >= 4 && rest.length >= 4 + rest.readInt32BE(0)) {
        const packet = rest.subarray(0, 4 + rest.readInt32BE(0));
        rest = rest.subarray(packet.length);
        if (onPacket(packet) && !to.destroyed) to.write(packet);
      }
    };
    from.on('data', (d: Buffer) => {
      if (head !== undefined) {
        head = Buffer.concat([head, d]);
        if (head.length < headBytes) return;
        const all = head;
        head = undefined;
        if (!onHead(all) || to.destroyed) return;
        // The connect request is one packet; whatever followed it in the same chunk is framed.
        const first = 4 + all.readInt32BE(0);
        to.write(all.subarray(0, first));
        if (all.length > first) send(all.subarray(first));
        return;
      }
      send(d);
    });
  }
}

/** What {@link expireSession} needs: the server, the proxy the client talks through, and the session's credentials. */
export interface ExpireSessionTarget {
  /** The server's own client port (not the proxy). */
  serverPort: number;
  proxy: FreezeProxy;
  sessionId: Buffer;
  sessionPassword: Buffer;
  timeoutMs?: number;
}

/**
 * Makes ZooKeeper expire a session for real (see the module comment). Resolves once the
 * server has closed the session (its ephemeral znodes are gone) and the client's connection
 * was cut; the client learns of the expiry when it reconnects, within milliseconds.
 */
export async function expireSession(t: ExpireSessionTarget): Promise<void> {
  const hex = t.sessionId.toString('hex');
  const timeoutMs = t.timeoutMs ?? 10_000;
  t.proxy.freeze(hex);
  try {
    const options = { sessionTimeout: 4000, spinDelay: 50, sessionId: t.sessionId, sessionPassword: t.sessionPassword };
    const second = zookeeper.createClient(`127.0.0.1:${t.serverPort}`, options as Partial<zookeeper.Option>);
    const closed = new Promise<void>((resolve) => second.once('disconnected', () => resolve()));
    try {
      await withTimeout(new Promise<void>((resolve, reject) => {
        second.once('connected', () => resolve());
        second.once('expired', () => reject(new Error(`session ${hex} had expired already`)));
        second.connect();
      }), timeoutMs, `a second client to attach to session ${hex}`);
    } finally {
      second.close();
    }
    await withTimeout(closed, timeoutMs, `session ${hex} to close`);
  } finally {
    t.proxy.thaw();
  }
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    })]);
  } finally {
    clearTimeout(timer);
  }
}
