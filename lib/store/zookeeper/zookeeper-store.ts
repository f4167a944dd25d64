/**
 * The ZooKeeper state store: Nodepool's tree and JSON (layout.ts, records.ts), so the
 * server, builders, CLI and Zuul on many hosts share one state. One handle holds one main
 * ZooKeeper session (watches, the watched cache that serves the list calls, and writes that
 * belong to no store session) plus one session per store session it opened (sessions.ts).
 */
import { coerceError, StoreError } from '../../errors.js';
import type { ComponentEntry, ComponentInfo, ComponentKind, ProcessComponentKind } from '../components.js';
import { CorruptLog, sortCorrupt, type CorruptFilter, type CorruptRecord } from '../corrupt.js';
import type { ImageData, ImageDataStore, ImportCounts } from '../image-data.js';
import { checkImportInstallation, withInstallation } from '../installation.js';
import type {
  BuildPatch, BuildRecord, BuildRequest, BuildState, LauncherPatch, LauncherRecord, LockRecord, NewBuild, NewNode,
  NewNodeRequest, NewUpload, NodePatch, NodeRecord, NodeRequestPatch, NodeRequestRecord, NodeState,
  PauseRecord, RequestState, SessionRecord, UploadPatch, UploadRecord, UploadState,
} from '../models.js';
import type { ExpectState, LockOptions, NewSession, ReapCounts, Store, StoreOptions } from '../store.js';
import { ZkBuilds, type BuildFilter } from './builds.js';
import type { ZkContext } from './context.js';
import { zkInstallationId, zkInstallationPeek } from './identity.js';
import { ZkImageData } from './image-data.js';
import { ZkIntents } from './intents.js';
import { Layout } from './layout.js';
import { ZkLocks } from './locks.js';
import { ZkNodes, type NodeFilter } from './nodes.js';
import { ZkRequests, type RequestFilter } from './requests.js';
import { Sequences } from './sequences.js';
import { ZkSessions } from './sessions.js';
import { TlsTunnel, type TlsMaterial } from './tls-tunnel.js';
import { treeShape } from './tree-shape.js';
import { TreeCache } from './tree-cache.js';
import { ZkUploads, type UploadFilter } from './uploads.js';
import { ReadCounter, ZkClient } from './zk-client.js';
import { nodeLock } from '../lock-names.js';

/** One ZooKeeper server as configured. */
export interface ZooKeeperServer {
  host: string;
  port: number;
  chroot?: string | undefined;
}

/** Options of {@link ZooKeeperStore.open}. */
export interface ZooKeeperStoreOptions extends StoreOptions {
  servers: readonly ZooKeeperServer[];
  /** Mutual TLS towards the servers' secure ports (PEM contents). */
  tls?: TlsMaterial;
  /** Session timeout of the handle's main session (default 10 s, Nodepool's `zookeeper-timeout`). */
  sessionTimeoutMs?: number;
  /** How long opening waits for a server (default 15 s). */
  connectTimeoutMs?: number;
}

/** A {@link Store} in ZooKeeper. */
export class ZooKeeperStore implements Store, ImageDataStore {
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly listeners = new Set<() => void>();
  private firePending = false;
  private syncNeeded = false;
  private readonly builds: ZkBuilds;
  private readonly uploads: ZkUploads;
  private readonly intents: ZkIntents;
  private readonly nodes: ZkNodes;
  private readonly requests: ZkRequests;
  private readonly sessions: ZkSessions;
  private readonly locks: ZkLocks;
  private readonly cache: TreeCache;
  private readonly imageData: ZkImageData;
  private rebinding: Promise<void> | undefined;
  private installation: string | undefined;
  private ticks = 0;

  private constructor(
    private main: ZkClient,
    readonly layout: Layout,
    private readonly hosts: string,
    private readonly tunnel: TlsTunnel | undefined,
    private readonly readCounter: ReadCounter,
    private readonly opts: ZooKeeperStoreOptions,
  ) {
    const clock = opts.clock ?? Date.now;
    this.cache = new TreeCache(main, [layout.images, layout.nodes, layout.requests, layout.launchers], treeShape(layout),
      () => this.fireSoon(), Math.max(main.sessionTimeoutMs, 5000));
    const ctx: ZkContext = {
      layout,
      main: () => this.main,
      cache: this.cache,
      clock,
      sequences: new Sequences(() => this.main, layout.sequences),
      fresh: () => this.fresh(),
      wroteElsewhere: () => { this.syncNeeded = true; },
      tick: () => ++this.ticks,
      corrupt: new CorruptLog(opts.log?.child({ component: 'store' })),
    };
    this.builds = new ZkBuilds(ctx);
    this.uploads = new ZkUploads(ctx, this.builds);
    this.intents = new ZkIntents(ctx);
    this.nodes = new ZkNodes(ctx, (id) => this.locks.contender(nodeLock(id)));
    this.sessions = new ZkSessions(ctx, (ttlMs) => this.connect(ttlMs, () => { this.syncNeeded = true; }));
    this.requests = new ZkRequests(ctx, (id, what) => this.sessions.client(id, what));
    this.locks = new ZkLocks(ctx, this.sessions);
    this.imageData = new ZkImageData(ctx, {
      builds: () => this.builds.list(), uploads: () => this.uploads.list(),
      pauses: () => this.intents.listPauses(), buildRequests: () => this.intents.listBuildRequests(),
    });
    this.watchMain(main);
  }

  /**
   * Connects (through TLS tunnels when `tls` is given), creates the tree's directories under
   * the chroot when missing, and reads the cached parts of the tree.
   * Thrown: StoreError when no server answers, the chroots differ, or the tree cannot be read.
   */
  static async open(opts: ZooKeeperStoreOptions): Promise<ZooKeeperStore> {
    if (opts.servers.length === 0) throw new StoreError('no ZooKeeper servers configured');
    const chroots = new Set(opts.servers.map((s) => normaliseChroot(s.chroot)));
    if (chroots.size > 1) throw new StoreError(`the ZooKeeper servers name different chroots (${[...chroots].map((c) => c || '/').join(', ')}); one store has one chroot`);
    const layout = new Layout([...chroots][0] as string);
    const tunnel = opts.tls ? await TlsTunnel.open(opts.servers, opts.tls) : undefined;
    const hosts = tunnel ? tunnel.hosts : opts.servers.map((s) => `${s.host}:${s.port}`).join(',');
    const reads = new ReadCounter();
    let main: ZkClient | undefined;
    try {
      main = await ZkClient.connect({ hosts, sessionTimeoutMs: opts.sessionTimeoutMs ?? 10_000, reads, connectTimeoutMs: opts.connectTimeoutMs });
      const present = new Set(await main.getChildren(layout.root) ?? []);
      // A read-only handle (a listing command) leaves the tree as it found it; missing parts read as empty.
      if (!opts.readOnly) for (const dir of layout.dirs) if (!present.has(dir.slice(layout.root.length + 1))) await main.mkdirp(dir);
      const store = new ZooKeeperStore(main, layout, hosts, tunnel, reads, opts);
      await store.cache.start();
      return store;
    } catch (err) {
      await main?.close();
      await tunnel?.close();
      if (err instanceof StoreError) throw err;
      throw new StoreError(`opening the ZooKeeper store at ${hosts}${layout.chroot}: ${coerceError(err).message}`, { cause: err });
    }
  }

  /** ZooKeeper reads this handle made so far (getData, getChildren, exists; not heartbeats). */
  readCount(): number {
    return this.readCounter.count;
  }

  /** The raw ZooKeeper credentials of a store session opened through this handle (for tests that expire it). */
  sessionCredentials(id: string): { sessionId: Buffer; sessionPassword: Buffer } | undefined {
    return this.sessions.credentials(id);
  }

  createBuild(input: NewBuild): Promise<BuildRecord> {
    return this.guard(`creating a build of ${input.diskimage}`, () => this.builds.create(input));
  }

  getBuild(id: string): Promise<BuildRecord | undefined> {
    return this.guard(`reading build ${id}`, () => this.builds.get(id));
  }

  listBuilds(filter?: BuildFilter): Promise<BuildRecord[]> {
    return this.guard('listing builds', () => this.builds.list(filter));
  }

  updateBuild(id: string, patch: BuildPatch, opts?: ExpectState<BuildState>): Promise<BuildRecord | undefined> {
    return this.guard(`updating build ${id}`, () => this.builds.update(id, patch, opts));
  }

  deleteBuild(id: string): Promise<boolean> {
    return this.guard(`deleting build ${id}`, () => this.builds.delete(id));
  }

  createUpload(input: NewUpload): Promise<UploadRecord> {
    return this.guard(`creating an upload of ${input.buildId} to ${input.provider}`, () => this.uploads.create(input));
  }

  getUpload(id: string): Promise<UploadRecord | undefined> {
    return this.guard(`reading upload ${id}`, () => this.uploads.get(id));
  }

  listUploads(filter?: UploadFilter): Promise<UploadRecord[]> {
    return this.guard('listing uploads', () => this.uploads.list(filter));
  }

  updateUpload(id: string, patch: UploadPatch, opts?: ExpectState<UploadState>): Promise<UploadRecord | undefined> {
    return this.guard(`updating upload ${id}`, () => this.uploads.update(id, patch, opts));
  }

  deleteUpload(id: string): Promise<boolean> {
    return this.guard(`deleting upload ${id}`, () => this.uploads.delete(id));
  }

  requestBuild(diskimage: string): Promise<BuildRequest> {
    return this.guard(`requesting a build of ${diskimage}`, () => this.intents.requestBuild(diskimage));
  }

  listBuildRequests(): Promise<BuildRequest[]> {
    return this.guard('listing build requests', () => this.intents.listBuildRequests());
  }

  clearBuildRequest(diskimage: string, requestedUpTo: number): Promise<void> {
    return this.guard(`clearing the build request of ${diskimage}`, () => this.intents.clearBuildRequest(diskimage, requestedUpTo));
  }

  setPause(diskimage: string, provider: string | null, paused: boolean, reason?: string): Promise<void> {
    const what = `${paused ? 'pausing' : 'unpausing'} ${diskimage}${provider === null ? '' : ` on ${provider}`}`;
    return this.guard(what, () => this.intents.setPause(diskimage, provider, paused, reason));
  }

  listPauses(): Promise<PauseRecord[]> {
    return this.guard('listing pauses', () => this.intents.listPauses());
  }

  putStatus(key: string, value: unknown): Promise<void> {
    return this.guard(`storing status ${key}`, () => this.intents.putStatus(key, value));
  }

  getStatus<T = unknown>(key: string): Promise<{ value: T; updated: number } | undefined> {
    return this.guard(`reading status ${key}`, () => this.intents.getStatus<T>(key));
  }

  installationId(): Promise<string> {
    return this.guard('reading the installation id', async () => (this.installation ??= await zkInstallationId(this.main, this.installationPath, this.opts.clock ?? Date.now)));
  }

  peekInstallationId(): Promise<string | undefined> {
    return this.guard('reading the installation id', async () => this.installation ?? await zkInstallationPeek(this.main, this.installationPath));
  }

  /** Where the installation id lives: beside Nodepool's paths, never one of them. */
  private get installationPath(): string {
    return `${this.layout.root}/installation`;
  }

  createNode(input: NewNode): Promise<NodeRecord> {
    return this.guard(`creating a node on ${input.provider}`, () => this.nodes.create(input));
  }

  getNode(id: string): Promise<NodeRecord | undefined> {
    return this.guard(`reading node ${id}`, () => this.nodes.get(id));
  }

  listNodes(filter?: NodeFilter): Promise<NodeRecord[]> {
    return this.guard('listing nodes', () => this.nodes.list(filter));
  }

  updateNode(id: string, patch: NodePatch, opts?: ExpectState<NodeState>): Promise<NodeRecord | undefined> {
    return this.guard(`updating node ${id}`, () => this.nodes.update(id, patch, opts));
  }

  deleteNode(id: string): Promise<boolean> {
    return this.guard(`deleting node ${id}`, () => this.nodes.delete(id));
  }

  async createRequest(input: NewNodeRequest): Promise<NodeRequestRecord> {
    const created = await this.guard(`creating a node request for ${input.requestor}`, () => this.requests.create(input));
    this.fireSoon();
    return created;
  }

  getRequest(id: string): Promise<NodeRequestRecord | undefined> {
    return this.guard(`reading node request ${id}`, () => this.requests.get(id));
  }

  listRequests(filter?: RequestFilter): Promise<NodeRequestRecord[]> {
    return this.guard('listing node requests', () => this.requests.list(filter));
  }

  async updateRequest(id: string, patch: NodeRequestPatch, opts?: ExpectState<RequestState>): Promise<NodeRequestRecord | undefined> {
    const updated = await this.guard(`updating node request ${id}`, () => this.requests.update(id, patch, opts));
    if (patch.state === 'requested' && updated) this.fireSoon();
    return updated;
  }

  deleteRequest(id: string): Promise<boolean> {
    return this.guard(`deleting node request ${id}`, () => this.requests.delete(id));
  }

  openSession(input: NewSession): Promise<SessionRecord> {
    return this.guard(`opening a session for ${input.owner}`, () => this.sessions.open(input));
  }

  renewSession(id: string): Promise<boolean> {
    return this.guard(`renewing session ${id}`, () => this.sessions.renew(id));
  }

  /** Closes the session; locks other sessions hold on its ephemeral requests go too. */
  closeSession(id: string): Promise<void> {
    return this.guard(`closing session ${id}`, async () => {
      const owned = this.sessions.credentials(id) ? (await this.requests.list()).filter((r) => r.requestorSession === id).map((r) => r.id) : [];
      await this.sessions.close(id);
      if (owned.length > 0) await this.requests.sweepOrphanLocks(owned);
    });
  }

  getSession(id: string): Promise<SessionRecord | undefined> {
    return this.guard(`reading session ${id}`, () => this.sessions.get(id));
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.guard('listing sessions', () => this.sessions.list());
  }

  isSessionLive(id: string): Promise<boolean> {
    return this.guard(`checking session ${id}`, () => this.sessions.isLive(id));
  }

  tryLock(resource: string, sessionId: string, opts?: LockOptions): Promise<boolean> {
    return this.guard(`locking ${resource} for session ${sessionId}`, () => this.locks.tryLock(resource, sessionId, opts?.exclusive ?? false));
  }

  unlock(resource: string, sessionId: string): Promise<boolean> {
    return this.guard(`unlocking ${resource} for session ${sessionId}`, () => this.locks.unlock(resource, sessionId));
  }

  getLock(resource: string): Promise<LockRecord | undefined> {
    return this.guard(`reading the lock on ${resource}`, () => this.locks.get(resource));
  }

  listLocks(prefix?: string): Promise<LockRecord[]> {
    return this.guard('listing locks', () => this.locks.list(prefix));
  }

  /**
   * ZooKeeper itself removed the lapsed sessions with their locks, launchers and ephemeral
   * requests, so those counts are 0; `locks` counts the locks other sessions still held on
   * requests that vanished that way (removed here).
   */
  reapSessions(): Promise<ReapCounts> {
    return this.guard('reaping lapsed sessions', async () => {
      const counts = await this.sessions.reap();
      return { ...counts, locks: counts.locks + await this.requests.sweepOrphanLocks() };
    });
  }

  registerLauncher(input: Omit<LauncherRecord, 'registered'>): Promise<LauncherRecord> {
    return this.guard(`registering launcher ${input.id}`, () => this.sessions.registerLauncher(input));
  }

  updateLauncher(id: string, patch: LauncherPatch): Promise<LauncherRecord | undefined> {
    return this.guard(`updating launcher ${id}`, () => this.sessions.updateLauncher(id, patch));
  }

  unregisterLauncher(id: string): Promise<void> {
    return this.guard(`unregistering launcher ${id}`, () => this.sessions.unregisterLauncher(id));
  }

  publishComponents(sessionId: string, kind: ProcessComponentKind, components: readonly ComponentInfo[]): Promise<void> {
    return this.guard(`publishing ${components.length} ${kind} component(s)`, () => this.sessions.components.publish(sessionId, kind, components));
  }

  /** Nodepool 11's component registry as stored: every component of `kind` (any process's), by znode name. */
  listComponents(kind: ComponentKind): Promise<ComponentEntry[]> {
    return this.guard(`listing ${kind} components`, () => this.sessions.components.list(kind));
  }

  listLaunchers(): Promise<LauncherRecord[]> {
    return this.guard('listing launchers', () => this.sessions.listLaunchers());
  }

  /** A consistent snapshot of the image records and counters (lib/store/zookeeper/image-data.ts says how). */
  exportImageData(): Promise<ImageData> {
    return this.guard('exporting image data', async () => withInstallation(await this.imageData.export(), await zkInstallationPeek(this.main, this.installationPath)));
  }

  /** Writes image data in bounded transactions, removed again on a failure (lib/store/zookeeper/image-data.ts). */
  importImageData(data: ImageData): Promise<ImportCounts> {
    return this.guard('importing image data', async () => {
      checkImportInstallation(await zkInstallationPeek(this.main, this.installationPath), data);
      const counts = await this.imageData.import(data);
      if (data.installation) this.installation = await zkInstallationId(this.main, this.installationPath, this.opts.clock ?? Date.now, data.installation);
      return counts;
    });
  }

  /** From the cache: records that do not parse or validate. */
  listCorrupt(filter: CorruptFilter = {}): Promise<CorruptRecord[]> {
    return this.guard('listing corrupt records', async () => {
      await this.fresh();
      const all = [
        ...this.builds.corrupt(), ...this.uploads.corrupt(), ...this.intents.corrupt(), ...this.nodes.corrupt(),
        ...this.requests.corrupt(), ...this.sessions.corruptLaunchers(),
      ];
      return sortCorrupt(filter.kinds ? all.filter((c) => filter.kinds?.includes(c.kind)) : all);
    });
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  /** Closes the store sessions of this handle, the main session and the TLS tunnels. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      this.listeners.clear();
      this.cache.close();
      await this.sessions.closeAll();
      await this.main.close();
      await this.tunnel?.close();
    })();
    return this.closing;
  }

  private async fresh(): Promise<void> {
    await this.rebinding;
    if (this.syncNeeded) {
      this.syncNeeded = false;
      await this.cache.sync();
    } else {
      await this.cache.barrier();
    }
  }

  private connect(ttlMs: number, onExpired: () => void): Promise<ZkClient> {
    return ZkClient.connect({ hosts: this.hosts, sessionTimeoutMs: ttlMs, reads: this.readCounter, connectTimeoutMs: this.opts.connectTimeoutMs })
      .then((c) => c.once('expired', onExpired));
  }

  /** When the main session expires, a new one takes its place and the cache is read afresh. */
  private watchMain(client: ZkClient): void {
    client.once('expired', () => {
      if (this.closed) return;
      this.rebinding = (async () => {
        for (let attempt = 0; !this.closed; attempt++) {
          try {
            const next = await ZkClient.connect({ hosts: this.hosts, sessionTimeoutMs: this.opts.sessionTimeoutMs ?? 10_000, reads: this.readCounter, connectTimeoutMs: this.opts.connectTimeoutMs });
            if (this.closed) { await next.close(); return; }
            this.main = next;
            this.watchMain(next);
            await this.cache.rebind(next);
            return;
          } catch {
            await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 100 * 2 ** attempt)));
          }
        }
      })();
    });
  }

  private fireSoon(): void {
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

  /** Runs one operation; failures become StoreErrors that say what was being done. */
  private async guard<T>(what: string, op: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreError(`${what}: the ZooKeeper store is closed`);
    try {
      return await op();
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(`${what}: ${coerceError(err).message}`, { cause: err });
    }
  }
}

/** '' for no chroot, else `/a/b` (leading slash, no trailing one). */
function normaliseChroot(chroot: string | undefined): string {
  if (chroot === undefined) return '';
  const trimmed = chroot.replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

