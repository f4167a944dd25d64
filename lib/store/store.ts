/**
 * The state store contract. The server is the only writer of build and upload state; the CLI
 * reads everything and records operator intents (build requests, pauses, delete marks through
 * a conditional state change). Every backend passes test/contract/store.contract.ts.
 *
 * The interface is split by entity so nodes, requests and locks join it later as siblings.
 */
import type {
  BuildPatch, BuildRecord, BuildRequest, BuildState, NewBuild, NewUpload, PauseRecord,
  UploadPatch, UploadRecord, UploadState,
} from './models.js';

/** Conditional update: apply the patch only while the record is in one of these states. */
export interface ExpectState<S extends string> {
  expectStates?: readonly S[];
}

/** Builds of diskimages. */
export interface BuildStore {
  /**
   * Creates a build in state `building` with the next id of its diskimage
   * (`<diskimage>-<10 digits>`, never reused, even after the record is deleted).
   */
  createBuild(input: NewBuild): Promise<BuildRecord>;
  getBuild(id: string): Promise<BuildRecord | undefined>;
  /** Builds ordered by diskimage, then id. */
  listBuilds(filter?: { diskimage?: string; states?: readonly BuildState[] }): Promise<BuildRecord[]>;
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
  listUploads(filter?: { buildId?: string; provider?: string; diskimage?: string; states?: readonly UploadState[] }): Promise<UploadRecord[]>;
  /** As {@link BuildStore.updateBuild}. */
  updateUpload(id: string, patch: UploadPatch, opts?: ExpectState<UploadState>): Promise<UploadRecord | undefined>;
  deleteUpload(id: string): Promise<boolean>;
}

/** Operator intents and the server's published status. */
export interface IntentStore {
  /** Records (or refreshes) a build request for a diskimage. */
  requestBuild(diskimage: string): Promise<BuildRequest>;
  listBuildRequests(): Promise<BuildRequest[]>;
  /** Removes the request if it was made at or before `requestedUpTo` (a newer request survives). */
  clearBuildRequest(diskimage: string, requestedUpTo: number): Promise<void>;
  /** Pauses (or unpauses) a diskimage's builds (`provider` null) or its uploads to one provider. */
  setPause(diskimage: string, provider: string | null, paused: boolean, reason?: string): Promise<void>;
  listPauses(): Promise<PauseRecord[]>;
  /** Stores a JSON value the server publishes for the CLI (lifecycle status, heartbeat). */
  putStatus(key: string, value: unknown): Promise<void>;
  getStatus<T = unknown>(key: string): Promise<{ value: T; updated: number } | undefined>;
}

/** Everything one state store offers. */
export interface Store extends BuildStore, UploadStore, IntentStore {
  /** Closes the store; further calls reject. Idempotent. */
  close(): Promise<void>;
}

/** Options every backend accepts. */
export interface StoreOptions {
  /** The clock for `stateTime`, `created` and the like (default Date.now). */
  clock?: () => number;
}
