/**
 * A small promise API over node-zookeeper-client: the calls the ZooKeeper store makes, each
 * with a deadline, ZooKeeper's error codes mapped to ZooKeeperError (zk-library.ts), and every read
 * counted (so a bench can report reads per planner pass). One ZkClient is one ZooKeeper
 * session; it reconnects by itself after a connection loss and keeps the session, and it
 * reports `expired` once the server has ended the session.
 */
import { EventEmitter } from 'node:events';
import zookeeper from 'node-zookeeper-client';
import { ZooKeeperClosedError, ZooKeeperError } from '../../errors.js';
import {
  coalesceWrites, cutSocket, MODE, sessionHex, zkError, type Op, type OpResult, type Stat,
} from './zk-library.js';
import { PersistentWatches, type WatchEvent } from './persistent-watch.js';
import { HandshakeWatchdog } from './handshake-watchdog.js';
import type { ReadCounter } from './read-counter.js';
import type { StoreGiveUp } from './store-give-up.js';
import type { WriteObserver } from './write-observer.js';
import { zkMulti } from './zk-multi.js';

export { ReadCounter } from './read-counter.js';
export { StoreGiveUp } from './store-give-up.js';
export type { WriteObserver } from './write-observer.js';

/** Options of {@link ZkClient.connect}. */
export interface ZkClientOptions {
  /** `host:port,host:port` (no chroot: the store prefixes its paths itself). */
  hosts: string;
  /** Requested session timeout; the server clamps it to its min/max. */
  sessionTimeoutMs: number;
  /** Deadline of one call (default: the negotiated session timeout, at least 5 s). */
  opTimeoutMs?: number;
  reads: ReadCounter;
  /** How long connect() waits for the first connection (default 15 s). */
  connectTimeoutMs?: number;
  /** The store's stop-without-ZooKeeper switch (see {@link StoreGiveUp}). */
  giveUp?: StoreGiveUp;
}

/** A connected ZooKeeper session. Events: `expired`, `disconnected`, `connected`. */
export class ZkClient extends EventEmitter {
  private state: 'connected' | 'disconnected' | 'expired' | 'closed' = 'connected';
  /** When the server last answered anything (a call or the heartbeat). */
  private lastHeard = Date.now();
  private closing: Promise<void> | undefined;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly watchdog: HandshakeWatchdog;
  private readonly persistent: PersistentWatches;
  /** Paths with a persistent recursive watch (added again after every reconnect). */
  private readonly watchedRoots = new Set<string>();
  private writeObserver: WriteObserver | undefined;
  /** Calls waiting for an answer: failed at once when the client gives up (a stop without ZooKeeper). */
  private readonly pending = new Set<{ what: string; fail: (err: Error) => void }>();
  /** Armed while stopping and unreachable; `givingUp` once it fired (until a reconnect). */
  private giveUpTimer: NodeJS.Timeout | undefined;
  private givingUp = false;
  private readonly unsubscribeGiveUp: () => void;

  private constructor(private readonly client: zookeeper.Client, private readonly opts: ZkClientOptions) {
    super();
    this.persistent = new PersistentWatches(client);
    this.watchdog = new HandshakeWatchdog(client);
    client.on('disconnected', () => {
      if (this.state === 'connected') {
        this.state = 'disconnected';
        this.watchdog.start();
        this.armGiveUp();
        this.emit('disconnected');
      }
    });
    client.on('connected', () => {
      this.lastHeard = Date.now();
      this.watchdog.stop();
      clearTimeout(this.giveUpTimer);
      this.giveUpTimer = undefined;
      this.givingUp = false;
      if (this.state === 'disconnected') {
        this.state = 'connected';
        // Persistent watches belong to the connection: added again before anyone hears of the
        // reconnect (the server answers in order, so reads sent after this see them in place).
        for (const root of this.watchedRoots) this.persistent.add(root, () => undefined);
        this.emit('connected');
      }
    });
    client.on('expired', () => {
      if (this.state === 'closed' || this.state === 'expired') return;
      this.state = 'expired';
      clearInterval(this.heartbeat);
      this.watchdog.stop();
      this.emit('expired');
      client.close();
    });
    // The client library pings but never gives up on a silent server, so a partition would go
    // unnoticed: a cheap call every third of the timeout tells whether the server still answers.
    this.heartbeat = setInterval(() => {
      if (this.state === 'connected' || this.state === 'disconnected') {
        this.call('heartbeat', '/', (cb) => this.client.exists('/', (e, stat) => cb(e, stat)), false).catch(() => undefined);
      }
    }, Math.max(100, Math.floor(client.getSessionTimeout() / 3)));
    this.heartbeat.unref();
    this.unsubscribeGiveUp = opts.giveUp?.subscribe(() => this.armGiveUp()) ?? (() => undefined);
  }

  /** While stopping (the store's give-up armed) and unreachable: give up after its bound. */
  private armGiveUp(): void {
    const afterMs = this.opts.giveUp?.afterMs;
    if (afterMs === undefined || this.state !== 'disconnected' || this.giveUpTimer || this.givingUp) return;
    this.giveUpTimer = setTimeout(() => {
      this.giveUpTimer = undefined;
      if (this.state !== 'disconnected') return;
      this.givingUp = true;
      for (const p of [...this.pending]) p.fail(this.givenUp(p.what));
    }, afterMs);
    this.giveUpTimer.unref();
  }

  private givenUp(what: string): ZooKeeperError {
    this.opts.giveUp?.note(what);
    return new ZooKeeperError('CONNECTION_LOSS', `${what}: given up, ZooKeeper unreachable while stopping`);
  }

  /**
   * Opens a session. Thrown: ZooKeeperError `CONNECTION_LOSS` when no server answered within
   * `connectTimeoutMs`.
   */
  static async connect(opts: ZkClientOptions): Promise<ZkClient> {
    const client = zookeeper.createClient(opts.hosts, { sessionTimeout: opts.sessionTimeoutMs, spinDelay: 200, retries: 0 });
    coalesceWrites(client);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        client.close();
        cutSocket(client);
        reject(new ZooKeeperError('CONNECTION_LOSS', `connecting to ZooKeeper at ${opts.hosts}: no answer in ${opts.connectTimeoutMs ?? 15_000} ms`));
      }, opts.connectTimeoutMs ?? 15_000);
      client.once('connected', () => { clearTimeout(timer); resolve(); });
      client.connect();
    });
    return new ZkClient(client, opts);
  }

  /** The session id (16 hex digits). */
  get sessionId(): string {
    return sessionHex(this.client.getSessionId());
  }

  /** The raw session id and password (what a second client needs to attach to this session). */
  credentials(): { sessionId: Buffer; sessionPassword: Buffer } {
    return { sessionId: this.client.getSessionId(), sessionPassword: this.client.getSessionPassword() };
  }

  /** When the server last answered anything (a call or the heartbeat), epoch ms. */
  get heardAt(): number {
    return this.lastHeard;
  }

  /** The session timeout the server granted. */
  get sessionTimeoutMs(): number {
    return this.client.getSessionTimeout();
  }

  /**
   * Whether the session may still be alive: not expired or closed, and the server answered
   * within the session timeout (a partitioned client cannot know more, so past that it treats
   * the session as lost: its locks must not be relied on).
   */
  get alive(): boolean {
    if (this.state !== 'connected' && this.state !== 'disconnected') return false;
    return Date.now() - this.lastHeard < this.sessionTimeoutMs;
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  get expired(): boolean {
    return this.state === 'expired';
  }

  /**
   * The node's data and stat; undefined when there is none. `inOrder` gets the same answer from
   * the library's reply callback, in wire order with watch events and other replies (the
   * promise settles a microtask later, after events that came behind the reply).
   */
  getData(path: string, inOrder?: (got: { data: Buffer; stat: Stat } | undefined) => void): Promise<{ data: Buffer; stat: Stat } | undefined> {
    this.opts.reads.count += 1;
    return this.call(`reading ${path}`, path, (cb) => {
      this.client.getData(path, (e: unknown, data: Buffer, stat: Stat) => cb(e, { data: data ?? Buffer.alloc(0), stat }));
    }, true, inOrder);
  }

  /** The node's children (unsorted); undefined when there is no node. `inOrder`: as getData's. */
  getChildren(path: string, inOrder?: (children: string[] | undefined) => void): Promise<string[] | undefined> {
    this.opts.reads.count += 1;
    return this.call(`listing ${path}`, path, (cb) => {
      this.client.getChildren(path, (e, children) => cb(e, children));
    }, true, inOrder);
  }

  /** The node's stat; undefined when there is no node. */
  exists(path: string): Promise<Stat | undefined> {
    this.opts.reads.count += 1;
    return this.call(`checking ${path}`, path, (cb) => {
      const done = (e: unknown, stat: Stat): void => cb(e, stat ?? undefined);
      this.client.exists(path, done);
    }, false);
  }

  /**
   * Adds a persistent recursive watch on `path` (it need not exist): `listener` hears of every
   * create, delete and data change at or below it until the session ends, and the watch is
   * added again after each reconnect (events of the time in between are lost: the reconnect's
   * `connected` event tells the owner to read again). Thrown: ZooKeeperError `UNIMPLEMENTED`
   * from a server older than ZooKeeper 3.6.
   */
  async addWatch(path: string, listener: (event: WatchEvent) => void): Promise<void> {
    // Listening first: the events that follow the server's answer in the same socket read are
    // handed out before the answer's promise settles.
    if (!this.watchedRoots.has(path)) {
      this.watchedRoots.add(path);
      this.persistent.listen(path, listener);
    }
    await this.call(`watching ${path}`, path, (cb) => this.persistent.add(path, (e) => cb(e, undefined)), false).catch((err: unknown) => {
      if (err instanceof ZooKeeperError && err.code === 'UNIMPLEMENTED') {
        throw new ZooKeeperError('UNIMPLEMENTED', `watching ${path}: this ZooKeeper server has no persistent watches (addWatch); ZooKeeper 3.6 or later is needed`, path, { cause: err });
      }
      throw err;
    });
  }

  /** Sets (or clears) the observer of this client's data writes. */
  observeWrites(observer: WriteObserver | undefined): void {
    this.writeObserver = observer;
  }

  /** Creates a node; returns its path (with the sequence suffix for sequential modes). */
  create(path: string, data: Buffer, mode: number = MODE.persistent): Promise<string> {
    return this.call(`creating ${path}`, path, (cb) => this.client.create(path, data, mode, (e, p) => cb(e, p)), false);
  }

  /** Sets data at `version` (-1: any). */
  setData(path: string, data: Buffer, version = -1): Promise<Stat> {
    return this.call(`writing ${path}`, path, (cb) => {
      const observer = this.writeObserver;
      observer?.sent(path);
      try {
        this.client.setData(path, data, version, (e, stat) => {
          observer?.done(path, e ? undefined : { data, stat });
          cb(e, stat);
        });
      } catch (err) {
        observer?.done(path, undefined);
        throw err;
      }
    }, false);
  }

  /** Removes a node at `version` (-1: any). */
  remove(path: string, version = -1): Promise<void> {
    return this.call(`removing ${path}`, path, (cb) => this.client.remove(path, version, (e) => cb(e, undefined)), false);
  }

  /** Creates `path` and its missing parents (persistent, empty); fine when it exists. */
  async mkdirp(path: string): Promise<void> {
    const parts = path.split('/').filter(Boolean);
    let at = '';
    for (const part of parts) {
      at += `/${part}`;
      try {
        await this.create(at, Buffer.alloc(0));
      } catch (err) {
        if (!(err instanceof ZooKeeperError && err.code === 'NODE_EXISTS')) throw err;
      }
    }
  }

  /**
   * Runs `ops` atomically; returns one result per op (a create's path, a set's new stat).
   * Thrown: ZooKeeperError of the operation that failed (its `path` set), after which nothing
   * of the transaction applied.
   */
  multi(ops: readonly Op[], what: string): Promise<OpResult[]> {
    return this.call(what, undefined, (cb) => zkMulti(this.client, ops, what, this.writeObserver, cb), false);
  }

  /** Ends the session (the server deletes its ephemeral nodes). Idempotent. */
  close(): Promise<void> {
    clearInterval(this.heartbeat);
    this.watchdog.stop();
    clearTimeout(this.giveUpTimer);
    this.unsubscribeGiveUp();
    this.closing ??= new Promise<void>((resolve) => {
      const wasLive = this.state === 'connected' || this.state === 'disconnected';
      const unreachable = this.givingUp || (this.state === 'disconnected' && this.opts.giveUp?.afterMs !== undefined);
      this.state = 'closed';
      if (!wasLive) { resolve(); return; }
      if (unreachable) {
        // Stopping without ZooKeeper: no CLOSE_SESSION can be sent; the server ends the session
        // (and its ephemeral lock nodes) once the session timeout passes.
        this.opts.giveUp?.note('closing the ZooKeeper session');
        this.client.close();
        cutSocket(this.client);
        // A cut socket leaves the library's connect deadline (the session timeout, not unref'd)
        // armed while it reconnects: it would hold the stopping process that long.
        const manager = (this.client as unknown as { connectionManager?: { connectTimeoutHandler?: NodeJS.Timeout } }).connectionManager;
        clearTimeout(manager?.connectTimeoutHandler);
        resolve();
        return;
      }
      // The server answers CLOSE_SESSION once the session and its ephemeral nodes are gone,
      // and then drops the connection; a client that cannot reach it gives up after a while.
      const timer = setTimeout(() => { cutSocket(this.client); resolve(); }, Math.min(this.sessionTimeoutMs, 5000));
      this.client.once('disconnected', () => { clearTimeout(timer); resolve(); });
      this.client.close();
    });
    return this.closing;
  }

  private call<T>(what: string, path: string | undefined, start: (cb: (err: unknown, value: T) => void) => void, noNodeIsUndefined: boolean,
    inOrder?: (value: T) => void): Promise<T> {
    if (this.state === 'closed') return Promise.reject(new ZooKeeperClosedError('CONNECTION_LOSS', `${what}: the ZooKeeper session is closed`, path));
    if (this.state === 'expired') return Promise.reject(new ZooKeeperError('SESSION_EXPIRED', `${what}: the ZooKeeper session expired`, path));
    if (this.givingUp) return Promise.reject(this.givenUp(what));
    const timeoutMs = this.opts.opTimeoutMs ?? Math.max(this.sessionTimeoutMs, 5000);
    return new Promise<T>((resolve, reject) => {
      const entry = { what, fail: (e: Error) => { clearTimeout(timer); this.pending.delete(entry); reject(e); } };
      this.pending.add(entry);
      const timer = setTimeout(() => {
        this.pending.delete(entry);
        reject(new ZooKeeperError('OPERATION_TIMEOUT', `${what}: no answer from ZooKeeper in ${timeoutMs} ms`, path));
      }, timeoutMs);
      try {
        start((err, value) => {
          clearTimeout(timer);
          this.pending.delete(entry);
          const code = (err as { code?: unknown } | null)?.code;
          if (!err || (code !== zookeeper.Exception.CONNECTION_LOSS && code !== zookeeper.Exception.SESSION_EXPIRED)) this.lastHeard = Date.now();
          // inOrder runs inside the library's socket handler: a throw there would be an
          // uncaught exception of the process, so it fails this call instead.
          const answer = (v: T): void => {
            try {
              inOrder?.(v);
              resolve(v);
            } catch (e) {
              reject(e);
            }
          };
          if (!err) { answer(value); return; }
          const mapped = zkError(err, what, path);
          if (noNodeIsUndefined && mapped.code === 'NO_NODE') answer(undefined as T); else reject(mapped);
        });
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(entry);
        reject(zkError(err, what, path));
      }
    });
  }
}
