/**
 * The state store contract. The server is the only writer of build and upload state; the CLI
 * reads everything and records operator intents (build requests, pauses, delete marks through
 * a conditional state change). Every backend passes test/contract/store.contract.ts.
 *
 * The interface is split by entity so nodes, requests and locks join it later as siblings.
 */
import type { Logger } from '../log.js';
import type { RolloutSnapshot } from './rollout-snapshot.js';
import type { ComponentInfo, ProcessComponentKind } from './components.js';
import type { CorruptFilter, CorruptRecord } from './corrupt.js';
import type {
  BuildPatch, BuildRecord, BuildRequest, BuildState, LauncherPatch, LauncherRecord, LockRecord, NewBuild, NewNode,
  NewNodeRequest, NewUpload, NodePatch, NodeRecord, NodeRequestPatch, NodeRequestRecord, NodeState,
  AuditOutcome, AuditRecord, LaunchResult, NewAuditRecord, PauseRecord, PinRecord, RequestState, RevocationRecord, SessionRecord, UploadPatch, UploadRecord, UploadRetryRequest, UploadState,
} from './models.js';

/** Conditional update: apply the patch only while the record is in one of these states. */
export interface ExpectState<S extends string> {
  expectStates?: readonly S[];
}

/**
 * Conditional update of an upload's rollout decision (issue 31 §6): apply the patch only while
 * its launch counts and written decision are still those the decision was taken from
 * (lib/store/rollout-snapshot.ts holdsRolloutSnapshot); else StateConflictError and nothing changes.
 */
export interface ExpectRollout {
  expectRollout?: RolloutSnapshot;
}

/**
 * The list filters, written once: both backends' list code takes these types, so a field added
 * here is one each backend's list must handle (and the contract suite should test). Every field
 * given must match; an absent field matches everything.
 */
export interface BuildFilter {
  diskimage?: string;
  states?: readonly BuildState[];
}

/** Filter of {@link UploadStore.listUploads}. */
export interface UploadFilter {
  buildId?: string;
  provider?: string;
  diskimage?: string;
  states?: readonly UploadState[];
}

/** Filter of {@link NodeStore.listNodes}. */
export interface NodeFilter {
  provider?: string;
  pool?: string;
  /** Matches any of a node's labels. */
  label?: string;
  states?: readonly NodeState[];
  allocatedTo?: string;
}

/** Filter of {@link NodeRequestStore.listRequests}. */
export interface RequestFilter {
  states?: readonly RequestState[];
  requestor?: string;
}

/** Builds of diskimages. */
export interface BuildStore {
  /**
   * Creates a build in state `building` with the next id of its diskimage
   * (`<diskimage>-<10 digits>`, never reused, even after the record is deleted), and in the
   * same transaction removes the build requests it serves (`servesRequestsUpTo`).
   */
  createBuild(input: NewBuild): Promise<BuildRecord>;
  getBuild(id: string): Promise<BuildRecord | undefined>;
  /**
   * The log token the build was created with (NewBuild.logToken), or undefined: no such build,
   * or one recorded without a token (before issue 31, imported, Nodepool's own).
   */
  buildLogToken(id: string): Promise<string | undefined>;
  /** Builds ordered by diskimage, then id. */
  listBuilds(filter?: BuildFilter): Promise<BuildRecord[]>;
  /**
   * Applies a patch; `undefined` when the build does not exist.
   * Thrown: StateConflictError when `expectStates` is given and the build is in another state.
   */
  updateBuild(id: string, patch: BuildPatch, opts?: ExpectState<BuildState>): Promise<BuildRecord | undefined>;
  /**
   * Removes a build record; false when there was none.
   * Thrown: StoreError while upload records of the build remain (uploads go first).
   */
  deleteBuild(id: string): Promise<boolean>;
}

/** Uploads of builds to providers. */
export interface UploadStore {
  /** Creates an upload in state `uploading` with the next upload id (10 digits, never reused). Thrown: StoreError for an unknown build. */
  createUpload(input: NewUpload): Promise<UploadRecord>;
  getUpload(id: string): Promise<UploadRecord | undefined>;
  /** Uploads ordered by diskimage, provider, then id. */
  listUploads(filter?: UploadFilter): Promise<UploadRecord[]>;
  /** As {@link BuildStore.updateBuild}; with `expectRollout`, also only while the upload still holds that rollout snapshot. */
  updateUpload(id: string, patch: UploadPatch, opts?: ExpectState<UploadState> & ExpectRollout): Promise<UploadRecord | undefined>;
  deleteUpload(id: string): Promise<boolean>;
  /**
   * Counts one launch booted from upload `id` (`launches` or `launchFailures` + 1), atomically
   * against every other launcher; undefined when the upload is gone.
   */
  recordLaunch(id: string, result: LaunchResult): Promise<UploadRecord | undefined>;
}

/** Operator intents and the server's published status. */
export interface IntentStore {
  /** Records (or refreshes) a build request for a diskimage. */
  requestBuild(diskimage: string): Promise<BuildRequest>;
  listBuildRequests(): Promise<BuildRequest[]>;
  /** Removes the request if it was made at or before `requestedUpTo` (a newer request survives). */
  clearBuildRequest(diskimage: string, requestedUpTo: number): Promise<void>;
  /** Records (or refreshes) a request to retry `diskimage`'s failed uploads to `provider` now (the backoff is skipped once). */
  requestUploadRetry(diskimage: string, provider: string): Promise<UploadRetryRequest>;
  listUploadRetries(): Promise<UploadRetryRequest[]>;
  /** Removes the request if it was made at or before `requestedUpTo` (a newer request survives). */
  clearUploadRetry(diskimage: string, provider: string, requestedUpTo: number): Promise<void>;
  /** Pauses (or unpauses) a diskimage's builds (`provider` null) or its uploads to one provider. */
  setPause(diskimage: string, provider: string | null, paused: boolean, reason?: string): Promise<void>;
  listPauses(): Promise<PauseRecord[]>;
  /**
   * Pins a diskimage's launches (on `provider`, or everywhere when null) to build `buildId`, or
   * removes that pin when `buildId` is null. Pinning again replaces the build and the reason.
   * Resolves to the pin replaced or removed (null: none, or a corrupt one), read and written at
   * once: of two pins at the same time, exactly one replaced the pin before them.
   */
  setPin(diskimage: string, provider: string | null, buildId: string | null, reason?: string): Promise<PinRecord | null>;
  /** By diskimage, then provider (diskimage-wide first). */
  listPins(): Promise<PinRecord[]>;
  /** Revokes (or unrevokes) build `buildId` of `diskimage`; revoking again keeps `since`, a new reason replaces the old. */
  setRevocation(diskimage: string, buildId: string, revoked: boolean, reason?: string): Promise<void>;
  /** By diskimage, then build id. */
  listRevocations(): Promise<RevocationRecord[]>;
  /**
   * Appends an entry to the audit trail of web writes (issue 25 §1) and returns it with its id.
   * The store keeps at least the newest `AUDIT_KEEP` (audit.ts) entries and drops older ones.
   */
  recordAudit(entry: NewAuditRecord): Promise<AuditRecord>;
  /**
   * Writes how an action ended over its `attempted` entry `id` (status, result, message; the
   * rest, `time` included, stays), so one action is one entry. Resolves to the entry, or
   * undefined when no entry `id` is `attempted` (pruned, or completed already). Thrown:
   * StoreError for a malformed outcome or id.
   */
  completeAudit(id: string, outcome: AuditOutcome): Promise<AuditRecord | undefined>;
  /** Audit entries, newest first: at most `limit` (default 100), older than id `before` when given. */
  listAudit(filter?: { limit?: number; before?: string }): Promise<AuditRecord[]>;
  /** Stores a JSON value the server publishes for the CLI (lifecycle status, heartbeat). */
  putStatus(key: string, value: unknown): Promise<void>;
  getStatus<T = unknown>(key: string): Promise<{ value: T; updated: number } | undefined>;
  /**
   * The store's installation id (lib/store/installation.ts): random, made on the first call and
   * never changed; builds and cloud images carry it. Only the server asks (a read-only command
   * must not write).
   */
  installationId(): Promise<string>;
  /** The installation id without making one: undefined while no server has asked (read-only). */
  peekInstallationId(): Promise<string | undefined>;
  /**
   * For a process that is stopping (ZooKeeper only; SQLite has no such wait): from now on, a
   * session that cannot reach ZooKeeper for `afterMs` fails its pending and later calls at once
   * instead of waiting out their deadlines. Answers what was given up (read it after the stop).
   */
  giveUpWhenUnreachable?(afterMs: number): { count: number; given: readonly string[] };
}

/** Nodes: cloud servers and static host slots. */
export interface NodeStore {
  /** Creates a node with the next node id (10 digits, never reused). */
  createNode(input: NewNode): Promise<NodeRecord>;
  getNode(id: string): Promise<NodeRecord | undefined>;
  /** Nodes ordered by id. */
  listNodes(filter?: NodeFilter): Promise<NodeRecord[]>;
  /** As {@link BuildStore.updateBuild}. */
  updateNode(id: string, patch: NodePatch, opts?: ExpectState<NodeState>): Promise<NodeRecord | undefined>;
  /** Removes a node record (and its lock); false when there was none. */
  deleteNode(id: string): Promise<boolean>;
  /**
   * Removes a node record in one step without taking its lock, when no live session holds
   * that lock and the record is still as `seen` (a copy listNodes or getNode returned): the
   * deleter's path for a node whose removal cleans up nothing elsewhere (static). `deleted`, or
   * why not: `locked` (someone holds it), `changed` (written since), `gone`.
   */
  deleteNodeIfIdle(seen: NodeRecord): Promise<IdleDelete>;
}

/** What {@link NodeStore.deleteNodeIfIdle} did. */
export type IdleDelete = 'deleted' | 'locked' | 'changed' | 'gone';

/** Node requests. */
export interface NodeRequestStore {
  /** Creates a request in state `requested` with id `<priority>-<10-digit sequence>`. */
  createRequest(input: NewNodeRequest): Promise<NodeRequestRecord>;
  getRequest(id: string): Promise<NodeRequestRecord | undefined>;
  /** Requests ordered by priority, then age (= by id). */
  listRequests(filter?: RequestFilter): Promise<NodeRequestRecord[]>;
  /** As {@link BuildStore.updateBuild}. */
  updateRequest(id: string, patch: NodeRequestPatch, opts?: ExpectState<RequestState>): Promise<NodeRequestRecord | undefined>;
  /** Removes a request (and its lock); false when there was none. */
  deleteRequest(id: string): Promise<boolean>;
}

/**
 * Sessions, locks and launcher registrations: ZooKeeper's ephemeral nodes and lock recipe,
 * for any backend. A session lapses when not renewed within its TTL; its locks become stale
 * (free to take) and its launchers stop counting.
 */
export interface SessionStore {
  openSession(input: NewSession): Promise<SessionRecord>;
  /** Extends a session's lease; false when the session is gone (lapsed and reaped, or closed). */
  renewSession(id: string): Promise<boolean>;
  /** Ends a session: its locks, launcher registrations and ephemeral requests go with it. Idempotent. */
  closeSession(id: string): Promise<void>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  /** Sessions, live or lapsed. */
  listSessions(): Promise<SessionRecord[]>;
  /** Whether a session exists and is within its TTL. */
  isSessionLive(id: string): Promise<boolean>;
  /**
   * When the store's server last answered session `id` of this handle (epoch ms, the process's
   * clock): a networked store's session is confirmed only by an answer, whatever a renewal
   * said. Undefined where the store does not know (SQLite: a renewal is the confirmation).
   */
  sessionHeardAt(id: string): number | undefined;
  /**
   * Takes `resource` (`node:<id>` / `request:<id>`) for the session without waiting. True when
   * taken or already held by this session; a lock of a lapsed session is taken over.
   * Thrown: StoreError when the session is not live.
   */
  tryLock(resource: string, sessionId: string, opts?: LockOptions): Promise<boolean>;
  /** Releases the lock if this session holds it; false otherwise. */
  unlock(resource: string, sessionId: string): Promise<boolean>;
  getLock(resource: string): Promise<LockRecord | undefined>;
  /** Locks whose resource starts with `prefix` (all when omitted). */
  listLocks(prefix?: string): Promise<LockRecord[]>;
  /**
   * Deletes lapsed sessions with their locks, launchers and ephemeral requests (those whose
   * `requestorSession` lapsed); returns how many of each went.
   */
  reapSessions(): Promise<ReapCounts>;
  /**
   * Registers (or refreshes) a launcher (one pool worker) under a live session; `priority` and
   * `paused` keep their registered values when not given (first: 100 and false). The ZooKeeper
   * store also writes the pool's Nodepool 11 component (`/nodepool/components/pool/<host><seq>`,
   * lib/store/components.ts), anew after the session was replaced.
   */
  registerLauncher(input: Omit<LauncherRecord, 'registered'>): Promise<LauncherRecord>;
  /**
   * Changes a registered launcher's labels, priority or paused flag (and its pool component);
   * undefined when it is not registered.
   */
  updateLauncher(id: string, patch: LauncherPatch): Promise<LauncherRecord | undefined>;
  /** Removes a launcher registration and its pool component. */
  unregisterLauncher(id: string): Promise<void>;
  /** Launchers whose session is live, with their priority and paused flag. */
  listLaunchers(): Promise<LauncherRecord[]>;
  /**
   * Makes the session's Nodepool 11 components of `kind` (`launcher`: this process; `builder`:
   * the builder hosts this server knows of) exactly `components`, one per hostname: creates
   * what is missing, rewrites what changed, removes the rest. Call it again after the session
   * was replaced (the components went with the old one). SQLite keeps nothing: the registry is
   * for Nodepool 11 and Zuul, which read only ZooKeeper, and SQLite's sessions already name each
   * process. Thrown: StoreError when the session is not live.
   */
  publishComponents(sessionId: string, kind: ProcessComponentKind, components: readonly ComponentInfo[]): Promise<void>;
}

/**
 * Records that do not parse or validate (lib/store/corrupt.ts). The list calls above skip them
 * (a corrupt pause still pauses: its existence is the intent); `get` and `update` of one throw
 * CorruptRecordError; the ordinary delete calls (deleteBuild, deleteUpload, deleteNode,
 * deleteRequest, setPause(…, false)) remove them.
 */
export interface CorruptStore {
  /** Corrupt records by kind (builds, uploads, pauses, build requests, nodes, requests, launchers), then id. */
  listCorrupt(filter?: CorruptFilter): Promise<CorruptRecord[]>;
  /**
   * The corrupt node records, by id, with what each still names (read leniently from its raw
   * data). Leak cleanup counts them as covering their servers and VMs, as Nodepool counts any
   * znode that exists: a record we refuse (one Zuul wrote, say) must not get its server deleted.
   */
  listCorruptNodes(): Promise<NodeClaim[]>;
}

/** What a node record that does not validate still names (see {@link CorruptStore.listCorruptNodes}). */
export interface NodeClaim {
  /** The record's id (its znode's name, its row's id): always known. */
  id: string;
  /** Its external id when that reads as a non-empty string; null when it cannot be read. */
  externalId: string | null;
  /** Its provider when that reads as a string; null when it cannot be read (it may be any provider's). */
  provider: string | null;
}

/** Everything one state store offers. */
export interface Store extends BuildStore, UploadStore, IntentStore, NodeStore, NodeRequestStore, SessionStore, CorruptStore {
  /**
   * Calls `listener` soon after the store changed in a way a launcher should look at: a node
   * request created (or put back to requested) through this handle, or any write by another
   * process. A hint to look again sooner, never the only way work is found (listeners may hear
   * of changes that concern them not). Returns the unsubscribe function.
   */
  onChange(listener: () => void): () => void;
  /** Closes the store; further calls reject. Idempotent. */
  close(): Promise<void>;
}

/** What {@link SessionStore.openSession} takes. */
export interface NewSession {
  owner: string;
  hostname: string;
  pid: number;
  ttlMs: number;
}

/** What {@link SessionStore.reapSessions} removed. */
export interface ReapCounts {
  sessions: number;
  locks: number;
  launchers: number;
  requests: number;
}

/** Options of {@link SessionStore.tryLock}. */
export interface LockOptions {
  /**
   * Refuse also a lock this session already holds. The components of one process share its
   * session, so this is how one of them keeps off what another is working on, atomically.
   */
  exclusive?: boolean;
}

/** Options every backend accepts. */
export interface StoreOptions {
  /** The clock for `stateTime`, `created` and the like (default Date.now). */
  clock?: () => number;
  /** Where corrupt records are reported, once per version (default: not logged). */
  log?: Logger;
  /**
   * Opened for a read-only command (`list`, `dib-image-list`, …): opening creates nothing in a
   * ZooKeeper tree (no `launchers`, `sessions`, `sequences`, `locks`, `status`); a directory
   * that is missing reads as empty. (SQLite still creates its schema: one file, no tree.)
   */
  readOnly?: boolean;
}
