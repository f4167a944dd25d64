/**
 * The SQLite state store: one database file that the server and the CLI open at the same
 * time. WAL lets readers run beside a writer; writes take BEGIN IMMEDIATE and wait up to
 * `busyTimeoutMs` for each other. better-sqlite3 is synchronous; the async methods exist so a
 * ZooKeeper backend fits the same contract.
 */
import Database from 'better-sqlite3';
import { coerceError, StoreError } from '../../errors.js';
import type {
  BuildPatch, BuildRecord, BuildRequest, BuildState, NewBuild, NewUpload, PauseRecord,
  UploadPatch, UploadRecord, UploadState,
} from '../models.js';
import type { ExpectState, Store, StoreOptions } from '../store.js';
import { SqliteBuilds, type BuildFilter } from './builds.js';
import { SqliteIntents } from './intents.js';
import { migrate } from './migrations.js';
import { Sequences } from './sequences.js';
import { SqliteUploads, type UploadFilter } from './uploads.js';

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions extends StoreOptions {
  /** How long a write waits for another connection's lock before failing (default 5000 ms). */
  busyTimeoutMs?: number;
}

/** A {@link Store} in one SQLite file. */
export class SqliteStore implements Store {
  private closed = false;
  private readonly builds: SqliteBuilds;
  private readonly uploads: SqliteUploads;
  private readonly intents: SqliteIntents;

  private constructor(readonly file: string, private readonly db: Database.Database, clock: () => number) {
    const sequences = new Sequences(db);
    this.builds = new SqliteBuilds(db, clock, sequences);
    this.uploads = new SqliteUploads(db, clock, sequences);
    this.intents = new SqliteIntents(db, clock);
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
      return new SqliteStore(file, db, opts.clock ?? Date.now);
    } catch (err) {
      db.close();
      if (err instanceof StoreError) throw err;
      throw new StoreError(`opening state database ${file}: ${coerceError(err).message}`, { cause: err });
    }
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

  /** Closes the database (checkpointing the WAL when this is the last connection). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
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
