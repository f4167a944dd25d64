/**
 * The one `Store` facade over a backend (lib/store/store-backend.ts): every call is refused once
 * the store is closed, and a failure becomes a StoreError saying what was being done. It also
 * does what is the same in every backend: tells listeners after a request write, memoizes the
 * installation id, checks it on import, and sorts and filters corrupt records. SqliteStore and
 * ZooKeeperStore extend it with how they open and their own extras.
 */
import { coerceError, StoreError } from '../errors.js';
import type { AuditOutcome } from './models.js';
import type { ComponentInfo, ProcessComponentKind } from './components.js';
import { sortCorrupt, type CorruptFilter, type CorruptRecord } from './corrupt.js';
import { withoutLogUrls, type ImageData, type ImageDataStore, type ImportCounts } from './image-data.js';
import { checkImportInstallation, withInstallation } from './installation.js';
import type {
  BuildPatch, BuildRecord, BuildRequest, BuildState, LauncherPatch, LauncherRecord, LockRecord, NewBuild, NewNode,
  NewNodeRequest, NewUpload, NodePatch, NodeRecord, NodeRequestPatch, NodeRequestRecord, NodeState,
  AuditRecord, LaunchResult, NewAuditRecord, PauseRecord, PinRecord, RequestState, RevocationRecord, SessionRecord, UploadPatch,
  UploadRecord, UploadRetryRequest, UploadState,
} from './models.js';
import type { Maybe, StoreBackend } from './store-backend.js';
import type {
  BuildFilter, ExpectRollout, ExpectState, IdleDelete, LockOptions, NewSession, NodeClaim, NodeFilter, ReapCounts, RequestFilter, Store, UploadFilter,
} from './store.js';

/** A {@link Store} (with image data export and import) over one backend. */
export class StoreFacade implements Store, ImageDataStore {
  private closed = false;
  private closing: Promise<void> | undefined;
  private installation: string | undefined;

  protected constructor(private readonly backend: StoreBackend) {}

  createBuild(input: NewBuild): Promise<BuildRecord> {
    return this.guard(`creating a build of ${input.diskimage}`, () => this.backend.builds.create(input));
  }

  getBuild(id: string): Promise<BuildRecord | undefined> {
    return this.guard(`reading build ${id}`, () => this.backend.builds.get(id));
  }

  buildLogToken(id: string): Promise<string | undefined> {
    return this.guard(`reading the log token of build ${id}`, () => this.backend.builds.logToken(id));
  }

  listBuilds(filter?: BuildFilter): Promise<BuildRecord[]> {
    return this.guard('listing builds', () => this.backend.builds.list(filter));
  }

  updateBuild(id: string, patch: BuildPatch, opts?: ExpectState<BuildState>): Promise<BuildRecord | undefined> {
    return this.guard(`updating build ${id}`, () => this.backend.builds.update(id, patch, opts));
  }

  deleteBuild(id: string): Promise<boolean> {
    return this.guard(`deleting build ${id}`, () => this.backend.builds.delete(id));
  }

  createUpload(input: NewUpload): Promise<UploadRecord> {
    return this.guard(`creating an upload of ${input.buildId} to ${input.provider}`, () => this.backend.uploads.create(input));
  }

  getUpload(id: string): Promise<UploadRecord | undefined> {
    return this.guard(`reading upload ${id}`, () => this.backend.uploads.get(id));
  }

  listUploads(filter?: UploadFilter): Promise<UploadRecord[]> {
    return this.guard('listing uploads', () => this.backend.uploads.list(filter));
  }

  updateUpload(id: string, patch: UploadPatch, opts?: ExpectState<UploadState> & ExpectRollout): Promise<UploadRecord | undefined> {
    return this.guard(`updating upload ${id}`, () => this.backend.uploads.update(id, patch, opts));
  }

  deleteUpload(id: string): Promise<boolean> {
    return this.guard(`deleting upload ${id}`, () => this.backend.uploads.delete(id));
  }

  recordLaunch(id: string, result: LaunchResult): Promise<UploadRecord | undefined> {
    return this.guard(`counting a launch from upload ${id}`, () => this.backend.uploads.recordLaunch(id, result));
  }

  requestBuild(diskimage: string): Promise<BuildRequest> {
    return this.guard(`requesting a build of ${diskimage}`, () => this.backend.intents.requestBuild(diskimage));
  }

  listBuildRequests(): Promise<BuildRequest[]> {
    return this.guard('listing build requests', () => this.backend.intents.listBuildRequests());
  }

  clearBuildRequest(diskimage: string, requestedUpTo: number): Promise<void> {
    return this.guard(`clearing the build request of ${diskimage}`, () => this.backend.intents.clearBuildRequest(diskimage, requestedUpTo));
  }

  requestUploadRetry(diskimage: string, provider: string): Promise<UploadRetryRequest> {
    return this.guard(`requesting an upload retry of ${diskimage} on ${provider}`, () => this.backend.intents.requestUploadRetry(diskimage, provider));
  }

  listUploadRetries(): Promise<UploadRetryRequest[]> {
    return this.guard('listing upload retry requests', () => this.backend.intents.listUploadRetries());
  }

  clearUploadRetry(diskimage: string, provider: string, requestedUpTo: number): Promise<void> {
    return this.guard(`clearing the upload retry request of ${diskimage} on ${provider}`, () => this.backend.intents.clearUploadRetry(diskimage, provider, requestedUpTo));
  }

  recordAudit(entry: NewAuditRecord): Promise<AuditRecord> {
    return this.guard(`recording an audit entry of ${String(entry.action)}`, () => this.backend.audit.record(entry));
  }

  completeAudit(id: string, outcome: AuditOutcome): Promise<AuditRecord | undefined> {
    return this.guard(`completing audit entry ${String(id).slice(0, 40)}`, () => this.backend.audit.complete(id, outcome));
  }

  listAudit(filter?: { limit?: number; before?: string }): Promise<AuditRecord[]> {
    return this.guard('listing audit entries', () => this.backend.audit.list(filter));
  }

  setPause(diskimage: string, provider: string | null, paused: boolean, reason?: string): Promise<void> {
    const what = `${paused ? 'pausing' : 'unpausing'} ${diskimage}${provider === null ? '' : ` on ${provider}`}`;
    return this.guard(what, () => this.backend.intents.setPause(diskimage, provider, paused, reason));
  }

  listPauses(): Promise<PauseRecord[]> {
    return this.guard('listing pauses', () => this.backend.intents.listPauses());
  }

  setPin(diskimage: string, provider: string | null, buildId: string | null, reason?: string): Promise<PinRecord | null> {
    const where = provider === null ? '' : ` on ${provider}`;
    const what = buildId === null ? `unpinning ${diskimage}${where}` : `pinning ${diskimage}${where} to build ${buildId}`;
    return this.guard(what, () => this.backend.intents.setPin(diskimage, provider, buildId, reason));
  }

  listPins(): Promise<PinRecord[]> {
    return this.guard('listing pins', () => this.backend.intents.listPins());
  }

  setRevocation(diskimage: string, buildId: string, revoked: boolean, reason?: string): Promise<void> {
    return this.guard(`${revoked ? 'revoking' : 'unrevoking'} build ${buildId}`, () => this.backend.intents.setRevocation(diskimage, buildId, revoked, reason));
  }

  listRevocations(): Promise<RevocationRecord[]> {
    return this.guard('listing revocations', () => this.backend.intents.listRevocations());
  }

  putStatus(key: string, value: unknown): Promise<void> {
    return this.guard(`storing status ${key}`, () => this.backend.intents.putStatus(key, value));
  }

  getStatus<T = unknown>(key: string): Promise<{ value: T; updated: number } | undefined> {
    return this.guard(`reading status ${key}`, () => this.backend.intents.getStatus<T>(key));
  }

  installationId(): Promise<string> {
    return this.guard('reading the installation id', async () => (this.installation ??= await this.backend.installationId()));
  }

  peekInstallationId(): Promise<string | undefined> {
    return this.guard('reading the installation id', async () => this.installation ?? await this.backend.installationPeek());
  }

  createNode(input: NewNode): Promise<NodeRecord> {
    return this.guard(`creating a node on ${input.provider}`, () => this.backend.nodes.create(input));
  }

  getNode(id: string): Promise<NodeRecord | undefined> {
    return this.guard(`reading node ${id}`, () => this.backend.nodes.get(id));
  }

  listNodes(filter?: NodeFilter): Promise<NodeRecord[]> {
    return this.guard('listing nodes', () => this.backend.nodes.list(filter));
  }

  updateNode(id: string, patch: NodePatch, opts?: ExpectState<NodeState>): Promise<NodeRecord | undefined> {
    return this.guard(`updating node ${id}`, () => this.backend.nodes.update(id, patch, opts));
  }

  deleteNode(id: string): Promise<boolean> {
    return this.guard(`deleting node ${id}`, () => this.backend.nodes.delete(id));
  }

  deleteNodeIfIdle(seen: NodeRecord): Promise<IdleDelete> {
    return this.guard(`deleting node ${seen.id}`, () => this.backend.nodes.deleteIfIdle(seen));
  }

  async createRequest(input: NewNodeRequest): Promise<NodeRequestRecord> {
    const created = await this.guard(`creating a node request for ${input.requestor}`, () => this.backend.requests.create(input));
    this.backend.notify();
    return created;
  }

  getRequest(id: string): Promise<NodeRequestRecord | undefined> {
    return this.guard(`reading node request ${id}`, () => this.backend.requests.get(id));
  }

  listRequests(filter?: RequestFilter): Promise<NodeRequestRecord[]> {
    return this.guard('listing node requests', () => this.backend.requests.list(filter));
  }

  async updateRequest(id: string, patch: NodeRequestPatch, opts?: ExpectState<RequestState>): Promise<NodeRequestRecord | undefined> {
    const updated = await this.guard(`updating node request ${id}`, () => this.backend.requests.update(id, patch, opts));
    if (patch.state === 'requested' && updated) this.backend.notify();
    return updated;
  }

  deleteRequest(id: string): Promise<boolean> {
    return this.guard(`deleting node request ${id}`, () => this.backend.requests.delete(id));
  }

  openSession(input: NewSession): Promise<SessionRecord> {
    return this.guard(`opening a session for ${input.owner}`, () => this.backend.sessions.open(input));
  }

  renewSession(id: string): Promise<boolean> {
    return this.guard(`renewing session ${id}`, () => this.backend.sessions.renew(id));
  }

  sessionHeardAt(id: string): number | undefined {
    return this.backend.sessions.heardAt?.(id);
  }

  closeSession(id: string): Promise<void> {
    return this.guard(`closing session ${id}`, () => this.backend.closeSession(id));
  }

  getSession(id: string): Promise<SessionRecord | undefined> {
    return this.guard(`reading session ${id}`, () => this.backend.sessions.get(id));
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.guard('listing sessions', () => this.backend.sessions.list());
  }

  isSessionLive(id: string): Promise<boolean> {
    return this.guard(`checking session ${id}`, () => this.backend.sessions.isLive(id));
  }

  tryLock(resource: string, sessionId: string, opts?: LockOptions): Promise<boolean> {
    return this.guard(`locking ${resource} for session ${sessionId}`, () => this.backend.locks.tryLock(resource, sessionId, opts?.exclusive ?? false));
  }

  unlock(resource: string, sessionId: string): Promise<boolean> {
    return this.guard(`unlocking ${resource} for session ${sessionId}`, () => this.backend.locks.unlock(resource, sessionId));
  }

  getLock(resource: string): Promise<LockRecord | undefined> {
    return this.guard(`reading the lock on ${resource}`, () => this.backend.locks.get(resource));
  }

  listLocks(prefix?: string): Promise<LockRecord[]> {
    return this.guard('listing locks', () => this.backend.locks.list(prefix));
  }

  reapSessions(): Promise<ReapCounts> {
    return this.guard('reaping lapsed sessions', () => this.backend.reapSessions());
  }

  registerLauncher(input: Omit<LauncherRecord, 'registered'>): Promise<LauncherRecord> {
    return this.guard(`registering launcher ${input.id}`, () => this.backend.sessions.registerLauncher(input));
  }

  updateLauncher(id: string, patch: LauncherPatch): Promise<LauncherRecord | undefined> {
    return this.guard(`updating launcher ${id}`, () => this.backend.sessions.updateLauncher(id, patch));
  }

  unregisterLauncher(id: string): Promise<void> {
    return this.guard(`unregistering launcher ${id}`, () => this.backend.sessions.unregisterLauncher(id));
  }

  listLaunchers(): Promise<LauncherRecord[]> {
    return this.guard('listing launchers', () => this.backend.sessions.listLaunchers());
  }

  publishComponents(sessionId: string, kind: ProcessComponentKind, components: readonly ComponentInfo[]): Promise<void> {
    return this.guard(`publishing ${components.length} ${kind} component(s)`, () => this.backend.publishComponents(sessionId, kind, components));
  }

  /**
   * The image records and counters, with the installation id when there is one. Not audit
   * entries, upload retry requests or builds' log URLs: they belong to the running installation.
   */
  exportImageData(): Promise<ImageData> {
    return this.guard('exporting image data', async () => withInstallation(withoutLogUrls(await this.backend.exportImageData()), await this.backend.installationPeek()));
  }

  /** Refuses data of another installation (lib/store/installation.ts); adopts the data's id when the store has none. */
  importImageData(data: ImageData): Promise<ImportCounts> {
    return this.guard('importing image data', async () => {
      checkImportInstallation(await this.backend.installationPeek(), data);
      const counts = await this.backend.importImageData(data);
      if (data.installation) this.installation = await this.backend.installationId(data.installation);
      return counts;
    });
  }

  listCorrupt(filter: CorruptFilter = {}): Promise<CorruptRecord[]> {
    return this.guard('listing corrupt records', async () => {
      const all = await this.backend.corrupt(filter.kinds);
      return sortCorrupt(filter.kinds ? all.filter((c) => filter.kinds?.includes(c.kind)) : all);
    });
  }

  listCorruptNodes(): Promise<NodeClaim[]> {
    return this.guard('listing corrupt node records', async () => {
      const claims = await this.backend.nodes.corruptClaims();
      return claims.sort((a, b) => a.id.localeCompare(b.id));
    });
  }

  onChange(listener: () => void): () => void {
    return this.backend.subscribe(listener);
  }

  /** Closes the backend; further calls reject. Idempotent (every call answers the first one's outcome). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      await this.backend.close();
    })();
    return this.closing;
  }

  /** Runs one backend operation: refused once closed; failures become StoreErrors that say what was being done. */
  protected async guard<T>(what: string, op: () => Maybe<T>): Promise<T> {
    if (this.closed) throw new StoreError(`${what}: ${this.backend.wording.closed}`);
    try {
      return await op();
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(`${what}${this.backend.wording.at}: ${coerceError(err).message}`, { cause: err });
    }
  }
}
