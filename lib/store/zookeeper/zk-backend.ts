/**
 * The ZooKeeper backend of the store facade (lib/store/store-backend.ts). One handle holds one
 * main ZooKeeper session (watches, the watched cache that serves the list calls, and writes that
 * belong to no store session) plus one session per store session it opened (sessions.ts); when
 * the main session expires a new one takes its place and the cache is read afresh.
 */
import { backoffMs, type BackoffPolicy } from '../../backoff.js';
import type { ComponentInfo, ProcessComponentKind } from '../components.js';
import { wantsKind, type CorruptKind, type CorruptLog, type CorruptRecord } from '../corrupt.js';
import type { ImageData, ImportCounts } from '../image-data.js';
import { nodeLock } from '../lock-names.js';
import type { StoreBackend } from '../store-backend.js';
import type { ReapCounts } from '../store.js';
import { ZkAudit } from './audit.js';
import { ZkBuilds } from './builds.js';
import type { ZkContext } from './context.js';
import { zkInstallationId, zkInstallationPeek } from './identity.js';
import { ZkImageData } from './image-data.js';
import { ZkIntents } from './intents.js';
import type { Layout } from './layout.js';
import { ZkLocks } from './locks.js';
import { ZkNodes } from './nodes.js';
import { ZkRequests } from './requests.js';
import { Sequences } from './sequences.js';
import { ZkSessions } from './sessions.js';
import type { TlsTunnel } from './tls-tunnel.js';
import { treeShape } from './tree-shape.js';
import { TreeCache } from './tree-cache.js';
import { ZkUploads } from './uploads.js';
import { ZkClient, type ReadCounter, type StoreGiveUp } from './zk-client.js';

/** Delays between attempts to replace an expired main session: 100 ms doubling, at most 5 s. */
const REBIND_RETRY: BackoffPolicy = { initialMs: 100, maxMs: 5000 };

/** How a backend reaches the servers again (new sessions, a new main session). */
export interface ZkConnection {
  /** `host:port,…` (the TLS tunnels' ends when there are tunnels). */
  hosts: string;
  tunnel: TlsTunnel | undefined;
  reads: ReadCounter;
  /** The main session's timeout. */
  sessionTimeoutMs: number;
  connectTimeoutMs: number | undefined;
  clock: () => number;
  corrupt: CorruptLog;
  /** Stopping without ZooKeeper: shared by every client of this store. */
  giveUp?: StoreGiveUp;
}

/** One ZooKeeper tree as a store backend. */
export class ZkBackend implements StoreBackend {
  readonly wording = { closed: 'the ZooKeeper store is closed', at: '' };
  readonly builds: ZkBuilds;
  readonly uploads: ZkUploads;
  readonly intents: ZkIntents;
  readonly nodes: ZkNodes;
  readonly requests: ZkRequests;
  readonly sessions: ZkSessions;
  readonly locks: ZkLocks;
  readonly audit: ZkAudit;
  readonly cache: TreeCache;
  private readonly imageData: ZkImageData;
  private readonly listeners = new Set<() => void>();
  private firePending = false;
  private syncNeeded = false;
  private closed = false;
  private rebinding: Promise<void> | undefined;
  private ticks = 0;

  constructor(private main: ZkClient, readonly layout: Layout, private readonly conn: ZkConnection) {
    this.cache = new TreeCache(main, [layout.images, layout.imageIntents, layout.nodes, layout.requests, layout.launchers], treeShape(layout),
      () => this.notify(), Math.max(main.sessionTimeoutMs, 5000));
    const ctx: ZkContext = {
      layout,
      main: () => this.main,
      cache: this.cache,
      clock: conn.clock,
      sequences: new Sequences(() => this.main, layout.sequences),
      fresh: () => this.fresh(),
      wroteElsewhere: () => { this.syncNeeded = true; },
      tick: () => ++this.ticks,
      corrupt: conn.corrupt,
    };
    this.builds = new ZkBuilds(ctx);
    this.uploads = new ZkUploads(ctx, this.builds);
    this.intents = new ZkIntents(ctx);
    this.audit = new ZkAudit(ctx);
    this.nodes = new ZkNodes(ctx, (id) => this.locks.contender(nodeLock(id)), (id) => this.locks.gone(nodeLock(id)));
    this.sessions = new ZkSessions(ctx, (ttlMs) => this.connect(ttlMs, () => { this.syncNeeded = true; }));
    this.requests = new ZkRequests(ctx, (id, what) => this.sessions.client(id, what));
    this.locks = new ZkLocks(ctx, this.sessions);
    this.imageData = new ZkImageData(ctx, {
      builds: () => this.builds.list(), uploads: () => this.uploads.list(),
      pauses: () => this.intents.listPauses(), buildRequests: () => this.intents.listBuildRequests(),
      pins: () => this.intents.listPins(), revocations: () => this.intents.listRevocations(), uploadRetries: () => this.intents.listUploadRetries(),
    });
    this.watchMain(main);
  }

  /** Closes the session; locks other sessions hold on its ephemeral requests go too. */
  async closeSession(id: string): Promise<void> {
    const owned = this.sessions.credentials(id) ? (await this.requests.list()).filter((r) => r.requestorSession === id).map((r) => r.id) : [];
    await this.sessions.close(id);
    if (owned.length > 0) await this.requests.sweepOrphanLocks(owned);
  }

  /**
   * ZooKeeper itself removed the lapsed sessions with their locks, launchers and ephemeral
   * requests, so those counts are 0; `locks` counts the locks other sessions still held on
   * requests that vanished that way (removed here).
   */
  async reapSessions(): Promise<ReapCounts> {
    const counts = await this.sessions.reap();
    return { ...counts, locks: counts.locks + await this.requests.sweepOrphanLocks() };
  }

  publishComponents(sessionId: string, kind: ProcessComponentKind, components: readonly ComponentInfo[]): Promise<void> {
    return this.sessions.components.publish(sessionId, kind, components);
  }

  installationId(given?: string): Promise<string> {
    return zkInstallationId(this.main, this.installationPath, this.conn.clock, given);
  }

  installationPeek(): Promise<string | undefined> {
    return zkInstallationPeek(this.main, this.installationPath);
  }

  /**
   * From the cache: records that do not parse or validate; audit entries (not cached) only when
   * `kinds` asks for them, read from the tree.
   */
  async corrupt(kinds?: readonly CorruptKind[]): Promise<CorruptRecord[]> {
    await this.fresh();
    const audit = wantsKind(kinds, 'audit') ? await this.audit.corrupt() : [];
    return [
      ...this.builds.corrupt(), ...this.uploads.corrupt(), ...this.intents.corrupt(), ...this.nodes.corrupt(),
      ...this.requests.corrupt(), ...this.sessions.corruptLaunchers(), ...audit,
    ];
  }

  /** A consistent snapshot of the image records and counters (lib/store/zookeeper/image-data.ts says how). */
  exportImageData(): Promise<ImageData> {
    return this.imageData.export();
  }

  /** Writes image data in bounded transactions, removed again on a failure (lib/store/zookeeper/image-data.ts). */
  importImageData(data: ImageData): Promise<ImportCounts> {
    return this.imageData.import(data);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  /** Calls the listeners once soon, however many changes come before. */
  notify(): void {
    if (this.firePending || this.listeners.size === 0) return;
    this.firePending = true;
    queueMicrotask(() => {
      this.firePending = false;
      for (const l of [...this.listeners]) {
        try {
          l();
        } catch {
          // a listener's failure is its own; the others still hear about the change
        }
      }
    });
  }

  /** Closes the store sessions of this handle, the main session and the TLS tunnels. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.cache.close();
    await this.sessions.closeAll();
    await this.main.close();
    await this.conn.tunnel?.close();
  }

  /** Where the installation id lives: beside Nodepool's paths, never one of them. */
  private get installationPath(): string {
    return `${this.layout.root}/installation`;
  }

  private async fresh(): Promise<void> {
    await this.rebinding;
    // While stopping (give-up armed) the cache may wait on reads an unreachable ZooKeeper never
    // answers, and its barrier would hold the stop for its whole timeout (10 s): a round trip
    // first fails as soon as the client gives up (the launcher-only stop took 12.7 s so).
    if (this.syncNeeded || this.conn.giveUp?.afterMs !== undefined) {
      this.syncNeeded = false;
      await this.cache.sync();
    } else {
      await this.cache.barrier();
    }
  }

  private connect(ttlMs: number, onExpired: () => void): Promise<ZkClient> {
    return ZkClient.connect({ hosts: this.conn.hosts, sessionTimeoutMs: ttlMs, reads: this.conn.reads, connectTimeoutMs: this.conn.connectTimeoutMs, giveUp: this.conn.giveUp })
      .then((c) => c.once('expired', onExpired));
  }

  /** When the main session expires, a new one takes its place and the cache is read afresh. */
  private watchMain(client: ZkClient): void {
    client.once('expired', () => {
      if (this.closed) return;
      this.rebinding = (async () => {
        for (let attempt = 0; !this.closed; attempt++) {
          try {
            const next = await ZkClient.connect({ hosts: this.conn.hosts, sessionTimeoutMs: this.conn.sessionTimeoutMs, reads: this.conn.reads, connectTimeoutMs: this.conn.connectTimeoutMs, giveUp: this.conn.giveUp });
            if (this.closed) { await next.close(); return; }
            this.main = next;
            this.watchMain(next);
            await this.cache.rebind(next);
            return;
          } catch {
            await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, REBIND_RETRY)));
          }
        }
      })();
    });
  }
}
