/**
 * The SQLite state store: one database file that the server and the CLI open at the same
 * time. WAL lets readers run beside a writer; writes take BEGIN IMMEDIATE and wait up to
 * `busyTimeoutMs` for each other, in short attempts with an asynchronous backoff between them
 * (busy-wait.ts), so a wait never stalls the process. better-sqlite3 is synchronous; the store
 * facade (lib/store/store-facade.ts) gives it the async contract a ZooKeeper backend shares.
 */
import Database from 'better-sqlite3';
import { coerceError, StoreError } from '../../errors.js';
import type { Maybe } from '../store-backend.js';
import { StoreFacade } from '../store-facade.js';
import type { StoreOptions } from '../store.js';
import { BUSY_ATTEMPT_MS, waitOutBusy } from './busy-wait.js';
import { migrate } from './migrations.js';
import { SqliteBackend } from './sqlite-backend.js';

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions extends StoreOptions {
  /**
   * How long an operation waits for another connection's lock before failing with SQLITE_BUSY
   * (default 60000 ms: a write holds the lock for milliseconds, so only a stuck process is waited out that long).
   */
  busyTimeoutMs?: number;
}

/** Default of {@link SqliteStoreOptions.busyTimeoutMs}. */
export const DEFAULT_BUSY_TIMEOUT_MS = 60_000;

/** A state store (lib/store/store.ts) in one SQLite file, with image data export and import. */
export class SqliteStore extends StoreFacade {
  private constructor(readonly file: string, backend: SqliteBackend, private readonly db: Database.Database, private readonly busyTimeoutMs: number) {
    super(backend);
  }

  /** Every operation waits out SQLITE_BUSY (busy-wait.ts) for up to `busyTimeoutMs`. */
  protected override guard<T>(what: string, op: () => Maybe<T>): Promise<T> {
    return super.guard(what, () => waitOutBusy(op, { totalMs: this.busyTimeoutMs, isOpen: () => this.db.open }));
  }

  /**
   * Opens (creating if missing) the database in `file` and migrates it to the current schema.
   * Thrown: StoreError when the file cannot be opened, is not a SQLite database, or has a
   * schema version newer than this code knows.
   */
  static async open(file: string, opts: SqliteStoreOptions = {}): Promise<SqliteStore> {
    const busyTimeoutMs = opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    let db: Database.Database;
    try {
      db = new Database(file, { timeout: Math.min(busyTimeoutMs, BUSY_ATTEMPT_MS) });
    } catch (cause) {
      throw new StoreError(`opening state database ${file}: ${coerceError(cause).message}`, { cause });
    }
    try {
      const opened = db;
      // The journal mode and the migration take the write lock: a busy database is waited out here too.
      await waitOutBusy(() => {
        opened.pragma('journal_mode = WAL');
        opened.pragma('synchronous = NORMAL');
        opened.pragma('foreign_keys = ON');
        migrate(opened, file);
      }, { totalMs: busyTimeoutMs, isOpen: () => opened.open });
      return new SqliteStore(file, new SqliteBackend(file, db, opts.clock ?? Date.now, opts.log), db, busyTimeoutMs);
    } catch (err) {
      db.close();
      if (err instanceof StoreError) throw err;
      throw new StoreError(`opening state database ${file}: ${coerceError(err).message}`, { cause: err });
    }
  }
}
