/**
 * The SQLite state store: one database file that the server and the CLI open at the same
 * time. WAL lets readers run beside a writer; writes take BEGIN IMMEDIATE and wait up to
 * `busyTimeoutMs` for each other. better-sqlite3 is synchronous; the async methods exist so a
 * ZooKeeper backend fits the same contract.
 */
import Database from 'better-sqlite3';
import { coerceError, StoreError } from '../../errors.js';
import { CorruptLog, sortCorrupt, type CorruptFilter, type CorruptRecord } from '../corrupt.js';
import type { ImageData, ImageDataStore, ImportCounts } from '../image-data.js';
import { checkImportInstallation, withInstallation } from '../installation.js';
import type { Logger } from '../../log.js';
import type { ComponentInfo, ProcessComponentKind } from '../components.js';
import type {
  BuildPatch, BuildRecord, BuildRequest, BuildState, LauncherPatch, LauncherRecord, LockRecord, NewBuild, NewNode,
  NewNodeRequest, NewUpload, NodePatch, NodeRecord, NodeRequestPatch, NodeRequestRecord, NodeState,
  PauseRecord, RequestState, SessionRecord, UploadPatch, UploadRecord, UploadState,
} from '../models.js';
import type { ExpectState, LockOptions, NewSession, ReapCounts, Store, StoreOptions } from '../store.js';
import { SqliteBuilds, type BuildFilter } from './builds.js';
import { ChangeWatch } from './change-watch.js';
import { SqliteImageData } from './image-data.js';
import { sqliteInstallationId, sqliteInstallationPeek } from './identity.js';
import { SqliteIntents } from './intents.js';
import { SqliteLocks } from './locks.js';
import { migrate } from './migrations.js';
import { SqliteNodes, type NodeFilter } from './nodes.js';
import { SqliteRequests, type RequestFilter } from './requests.js';
import { Sequences } from './sequences.js';
import { SqliteSessions } from './sessions.js';
import { SqliteUploads, type UploadFilter } from './uploads.js';

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions extends StoreOptions {
  /** How long a write waits for another connection's lock before failing (default 5000 ms). */
  busyTimeoutMs?: number;
}

/** A {@link Store} in one SQLite file, with image data export and import. */
export class SqliteStore implements Store, ImageDataStore {
  private closed = false;
  private readonly builds: SqliteBuilds;
  private readonly uploads: SqliteUploads;
  private readonly intents: SqliteIntents;
  private readonly nodes: SqliteNodes;
  private readonly requests: SqliteRequests;
  private readonly sessions: SqliteSessions;
  private readonly locks: SqliteLocks;
  private readonly changes: ChangeWatch;
  private readonly imageData: SqliteImageData;
  private readonly createBuildTx: (input: NewBuild) => BuildRecord;
  private installation: string | undefined;

  private constructor(readonly file: string, private readonly db: Database.Database, clock: () => number, log?: Logger) {
    const sequences = new Sequences(db);
    const corrupt = new CorruptLog(log?.child({ component: 'store' }));
    this.builds = new SqliteBuilds(db, clock, sequences, corrupt);
    this.uploads = new SqliteUploads(db, clock, sequences, corrupt);
    this.intents = new SqliteIntents(db, clock, corrupt);
    this.nodes = new SqliteNodes(db, clock, sequences, corrupt);
    this.requests = new SqliteRequests(db, clock, sequences, corrupt);
    this.sessions = new SqliteSessions(db, clock, corrupt);
    this.locks = new SqliteLocks(db, clock);
    this.changes = new ChangeWatch(db);
    this.imageData = new SqliteImageData(db, clock);
    const createBuild = db.transaction((input: NewBuild) => {
      const build = this.builds.create(input);
      if (input.servesRequestsUpTo !== undefined) this.intents.clearBuildRequest(input.diskimage, input.servesRequestsUpTo);
      return build;
    });
    this.createBuildTx = (input) => createBuild.immediate(input);
  }

  /**
   * Opens (creating if missing) the database in `file` and migrates it to the current schema.
   * Thrown: StoreError when the file cannot be opened, is not a SQLite database, or has a
   * schema version newer than this code knows.
   */
  static async open(file: string, opts: SqliteStoreOptions = {}): Promise<SqliteStore> {
    const busyTimeoutMs = opts.busyTimeoutMs ?? 5000;
    let db: Database.Database;
    try {
      db = new Database(file, { timeout: busyTimeoutMs });
    } catch (cause) {
      throw new StoreError(`opening state database ${file}: ${coerceError(cause).message}`, { cause });
    }
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = ON');
      migrate(db, file);
      return new SqliteStore(file, db, opts.clock ?? Date.now, opts.log);
    } catch (err) {
      db.close();
      if (err instanceof StoreError) throw err;
      throw new StoreError(`opening state database ${file}: ${coerceError(err).message}`, { cause: err });
    }
  }

  createBuild(input: NewBuild): Promise<BuildRecord> {
    return this.guard(`creating a build of ${input.diskimage}`, () => this.createBuildTx(input));
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
    return this.guard('reading the installation id', () => (this.installation ??= sqliteInstallationId(this.db, Date.now)));
  }

  peekInstallationId(): Promise<string | undefined> {
    return this.guard('reading the installation id', () => this.installation ?? sqliteInstallationPeek(this.db));
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
    this.changes.notify();
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
    if (patch.state === 'requested' && updated) this.changes.notify();
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

  closeSession(id: string): Promise<void> {
    return this.guard(`closing session ${id}`, () => this.sessions.closeSession(id));
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

  reapSessions(): Promise<ReapCounts> {
    return this.guard('reaping lapsed sessions', () => this.sessions.reapSessions());
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

  /**
   * Checks the session and keeps nothing: Nodepool 11's component registry is read only from
   * ZooKeeper (by Nodepool and Zuul), and this file's sessions already name each process.
   */
  publishComponents(sessionId: string, kind: ProcessComponentKind, components: readonly ComponentInfo[]): Promise<void> {
    return this.guard(`publishing ${components.length} ${kind} component(s)`, () => {
      if (!this.sessions.isLive(sessionId)) throw new StoreError(`cannot publish ${kind} components: session ${sessionId} is not live (lapsed, closed or never opened)`);
    });
  }

  listLaunchers(): Promise<LauncherRecord[]> {
    return this.guard('listing launchers', () => this.sessions.listLaunchers());
  }

  exportImageData(): Promise<ImageData> {
    return this.guard('exporting image data', () => withInstallation(this.imageData.export(), sqliteInstallationPeek(this.db)));
  }

  importImageData(data: ImageData): Promise<ImportCounts> {
    return this.guard('importing image data', () => {
      checkImportInstallation(sqliteInstallationPeek(this.db), data);
      const counts = this.imageData.import(data);
      if (data.installation) this.installation = sqliteInstallationId(this.db, Date.now, data.installation);
      return counts;
    });
  }

  /** Rows that do not validate (lib/store/corrupt.ts). */
  listCorrupt(filter: CorruptFilter = {}): Promise<CorruptRecord[]> {
    return this.guard('listing corrupt records', () => {
      const all = [
        ...this.builds.corrupt(), ...this.uploads.corrupt(), ...this.intents.corrupt(), ...this.nodes.corrupt(),
        ...this.requests.corrupt(), ...this.sessions.corruptLaunchers(),
      ];
      return sortCorrupt(filter.kinds ? all.filter((c) => filter.kinds?.includes(c.kind)) : all);
    });
  }

  onChange(listener: () => void): () => void {
    return this.changes.subscribe(listener);
  }

  /** Closes the database (checkpointing the WAL when this is the last connection). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.changes.stop();
    try {
      this.db.close();
    } catch (cause) {
      throw new StoreError(`closing state database ${this.file}: ${coerceError(cause).message}`, { cause });
    }
  }

  /** Runs one synchronous operation as a promise; SQLite errors become StoreErrors with context. */
  private async guard<T>(what: string, op: () => T): Promise<T> {
    if (this.closed) throw new StoreError(`${what}: the state store ${this.file} is closed`);
    try {
      return op();
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(`${what} in ${this.file}: ${coerceError(err).message}`, { cause: err });
    }
  }
}
