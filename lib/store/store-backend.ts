/**
 * What a state store backend implements (SQLite, ZooKeeper): the records and their atomic
 * operations, without the facade's part (closed-store guard, error context, change hints after
 * request writes, the installation-id memo), which lib/store/store-facade.ts adds once for every
 * backend. Operations may answer synchronously (better-sqlite3) or with a promise (ZooKeeper).
 * A backend passes the contract suite test/contract/store.contract.ts.
 */
import type { AuditOutcome } from './models.js';
import type { ComponentInfo, ProcessComponentKind } from './components.js';
import type { CorruptKind, CorruptRecord } from './corrupt.js';
import type { ImageData, ImportCounts } from './image-data.js';
import type {
  BuildPatch, BuildRecord, BuildRequest, BuildState, LauncherPatch, LauncherRecord, LockRecord, NewBuild, NewNode,
  NewNodeRequest, NewUpload, NodePatch, NodeRecord, NodeRequestPatch, NodeRequestRecord, NodeState,
  AuditRecord, LaunchResult, NewAuditRecord, PauseRecord, PinRecord, RequestState, RevocationRecord, SessionRecord, UploadPatch,
  UploadRecord, UploadRetryRequest, UploadState,
} from './models.js';
import type {
  BuildFilter, ExpectRollout, ExpectState, IdleDelete, NewSession, NodeClaim, NodeFilter, ReapCounts, RequestFilter, UploadFilter,
} from './store.js';

/** A value now or later. */
export type Maybe<T> = T | Promise<T>;

/** One kind of record with a sequence id and states (builds, uploads, nodes, node requests). */
export interface RecordTable<R, N, P, S extends string, F> {
  create(input: N): Maybe<R>;
  get(id: string): Maybe<R | undefined>;
  list(filter?: F): Maybe<R[]>;
  /** Thrown: StateConflictError when `expectStates` is given and the record is in another state. */
  update(id: string, patch: P, opts?: ExpectState<S>): Maybe<R | undefined>;
  delete(id: string): Maybe<boolean>;
}

/** Operator intents and published status (lib/store/store.ts IntentStore, less the installation id). */
export interface IntentTable {
  requestBuild(diskimage: string): Maybe<BuildRequest>;
  listBuildRequests(): Maybe<BuildRequest[]>;
  clearBuildRequest(diskimage: string, requestedUpTo: number): Maybe<void>;
  requestUploadRetry(diskimage: string, provider: string): Maybe<UploadRetryRequest>;
  listUploadRetries(): Maybe<UploadRetryRequest[]>;
  clearUploadRetry(diskimage: string, provider: string, requestedUpTo: number): Maybe<void>;
  setPause(diskimage: string, provider: string | null, paused: boolean, reason?: string): Maybe<void>;
  listPauses(): Maybe<PauseRecord[]>;
  setPin(diskimage: string, provider: string | null, buildId: string | null, reason?: string): Maybe<PinRecord | null>;
  listPins(): Maybe<PinRecord[]>;
  setRevocation(diskimage: string, buildId: string, revoked: boolean, reason?: string): Maybe<void>;
  listRevocations(): Maybe<RevocationRecord[]>;
  putStatus(key: string, value: unknown): Maybe<void>;
  getStatus<T = unknown>(key: string): Maybe<{ value: T; updated: number } | undefined>;
}

/** The audit trail of web writes (issue 25): as IntentStore.recordAudit, completeAudit and listAudit (lib/store/store.ts). */
export interface AuditTable {
  record(entry: NewAuditRecord): Maybe<AuditRecord>;
  /** As IntentStore.completeAudit. */
  complete(id: string, outcome: AuditOutcome): Maybe<AuditRecord | undefined>;
  list(filter?: { limit?: number; before?: string }): Maybe<AuditRecord[]>;
}

/** Sessions and launcher registrations (closing and reaping are the backend's own: they reach other records). */
export interface SessionTable {
  open(input: NewSession): Maybe<SessionRecord>;
  renew(id: string): Maybe<boolean>;
  get(id: string): Maybe<SessionRecord | undefined>;
  list(): Maybe<SessionRecord[]>;
  isLive(id: string): Maybe<boolean>;
  /** When the server last answered a session of this handle (a networked store); undefined: not known here. */
  heardAt?(id: string): number | undefined;
  registerLauncher(input: Omit<LauncherRecord, 'registered'>): Maybe<LauncherRecord>;
  updateLauncher(id: string, patch: LauncherPatch): Maybe<LauncherRecord | undefined>;
  unregisterLauncher(id: string): Maybe<void>;
  listLaunchers(): Maybe<LauncherRecord[]>;
}

/** Locks of sessions on resources (`node:<id>`, `request:<id>`). */
export interface LockTable {
  tryLock(resource: string, sessionId: string, exclusive: boolean): Maybe<boolean>;
  unlock(resource: string, sessionId: string): Maybe<boolean>;
  get(resource: string): Maybe<LockRecord | undefined>;
  list(prefix?: string): Maybe<LockRecord[]>;
}

/** One state store backend. */
export interface StoreBackend {
  /** Words for error messages: `closed` ends "…: <closed>", `at` follows what failed ("… <at>: <error>"). */
  readonly wording: { closed: string; at: string };
  /** Creating a build also removes the build requests it serves (`servesRequestsUpTo`), atomically. */
  readonly builds: RecordTable<BuildRecord, NewBuild, BuildPatch, BuildState, BuildFilter> & {
    /** As BuildStore.buildLogToken (lib/store/store.ts). */
    logToken(id: string): Maybe<string | undefined>;
  };
  readonly uploads: RecordTable<UploadRecord, NewUpload, UploadPatch, UploadState, UploadFilter> & {
    /** As UploadStore.recordLaunch (lib/store/store.ts). */
    recordLaunch(id: string, result: LaunchResult): Maybe<UploadRecord | undefined>;
    /** As UploadStore.updateUpload, `expectRollout` included. */
    update(id: string, patch: UploadPatch, opts?: ExpectState<UploadState> & ExpectRollout): Maybe<UploadRecord | undefined>;
  };
  readonly nodes: RecordTable<NodeRecord, NewNode, NodePatch, NodeState, NodeFilter> & {
    /** As NodeStore.deleteNodeIfIdle (lib/store/store.ts). */
    deleteIfIdle(seen: NodeRecord): Maybe<IdleDelete>;
    /** As CorruptStore.listCorruptNodes (lib/store/store.ts), in any order. */
    corruptClaims(): Maybe<NodeClaim[]>;
  };
  readonly requests: RecordTable<NodeRequestRecord, NewNodeRequest, NodeRequestPatch, RequestState, RequestFilter>;
  readonly intents: IntentTable;
  readonly audit: AuditTable;
  readonly sessions: SessionTable;
  readonly locks: LockTable;
  /** Ends a session with its locks, launcher registrations and ephemeral requests. Idempotent. */
  closeSession(id: string): Maybe<void>;
  /** As SessionStore.reapSessions (lib/store/store.ts). */
  reapSessions(): Maybe<ReapCounts>;
  /** As SessionStore.publishComponents (lib/store/store.ts). */
  publishComponents(sessionId: string, kind: ProcessComponentKind, components: readonly ComponentInfo[]): Maybe<void>;
  /** The installation id, made (or set to `given`, when importing) if there is none. */
  installationId(given?: string): Maybe<string>;
  /** The stored installation id without making one. */
  installationPeek(): Maybe<string | undefined>;
  /**
   * Every corrupt record, in any order (the facade filters and sorts); audit entries only when
   * `kinds` (all when undefined) includes `audit`, since naming them reads the whole trail.
   */
  corrupt(kinds?: readonly CorruptKind[]): Maybe<CorruptRecord[]>;
  /** The image records and counters (lib/store/image-data.ts), without the installation id. */
  exportImageData(): Maybe<ImageData>;
  importImageData(data: ImageData): Maybe<ImportCounts>;
  /** As Store.onChange (lib/store/store.ts). */
  subscribe(listener: () => void): () => void;
  /** Tells this handle's listeners soon: a request was created or put back to requested through it. */
  notify(): void;
  /** Releases the backend's connections. Called once. */
  close(): Promise<void>;
}
