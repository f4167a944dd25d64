/**
 * The SQLite state store: one database file that the server and the CLI open at the same
 * time. WAL lets readers run beside a writer; writes take BEGIN IMMEDIATE and wait up to
 * `busyTimeoutMs` for each other. better-sqlite3 is synchronous; the store facade
 * (lib/store/store-facade.ts) gives it the async contract a ZooKeeper backend shares.
 */
import Database from 'better-sqlite3';
import { coerceError, StoreError } from '../../errors.js';
import { StoreFacade } from '../store-facade.js';
import type { StoreOptions } from '../store.js';
import { migrate } from './migrations.js';
import { SqliteBackend } from './sqlite-backend.js';

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions extends StoreOptions {
  /** How long a write waits for another connection's lock before failing (default 5000 ms). */
  busyTimeoutMs?: number;
}

/** A state store (lib/store/store.ts) in one SQLite file, with image data export and import. */
export class SqliteStore extends StoreFacade {
  private constructor(readonly file: string, backend: SqliteBackend) {
    super(backend);
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
      return new SqliteStore(file, new SqliteBackend(file, db, opts.clock ?? Date.now, opts.log));
    } catch (err) {
      db.close();
      if (err instanceof StoreError) throw err;
      throw new StoreError(`opening state database ${file}: ${coerceError(err).message}`, { cause: err });
    }
  }
}
