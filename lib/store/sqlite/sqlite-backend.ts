/**
 * The SQLite backend of the store facade (lib/store/store-backend.ts): the tables of one open
 * database, synchronous (better-sqlite3), each write its own BEGIN IMMEDIATE transaction.
 */
import type Database from 'better-sqlite3';
import { coerceError, StoreError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ComponentInfo, ProcessComponentKind } from '../components.js';
import { CorruptLog, wantsKind, type CorruptKind, type CorruptRecord } from '../corrupt.js';
import type { ImageData, ImportCounts } from '../image-data.js';
import type { StoreBackend } from '../store-backend.js';
import type { ReapCounts } from '../store.js';
import { SqliteAudit } from './audit.js';
import { SqliteBuilds } from './builds.js';
import { ChangeWatch } from './change-watch.js';
import { sqliteInstallationId, sqliteInstallationPeek } from './identity.js';
import { SqliteImageData } from './image-data.js';
import { SqliteIntents } from './intents.js';
import { SqliteLocks } from './locks.js';
import { SqliteNodes } from './nodes.js';
import { SqliteRequests } from './requests.js';
import { Sequences } from './sequences.js';
import { SqliteSessions } from './sessions.js';
import { SqliteUploads } from './uploads.js';

/** One SQLite database as a store backend. */
export class SqliteBackend implements StoreBackend {
  readonly wording: { closed: string; at: string };
  readonly builds: SqliteBuilds;
  readonly uploads: SqliteUploads;
  readonly intents: SqliteIntents;
  readonly nodes: SqliteNodes;
  readonly requests: SqliteRequests;
  readonly sessions: SqliteSessions;
  readonly locks: SqliteLocks;
  readonly audit: SqliteAudit;
  private readonly changes: ChangeWatch;
  private readonly imageData: SqliteImageData;

  constructor(private readonly file: string, private readonly db: Database.Database, clock: () => number, log?: Logger) {
    this.wording = { closed: `the state store ${file} is closed`, at: ` in ${file}` };
    const sequences = new Sequences(db);
    const corrupt = new CorruptLog(log?.child({ component: 'store' }));
    this.changes = new ChangeWatch(db);
    this.intents = new SqliteIntents(db, clock, corrupt, () => this.changes.notify());
    this.builds = new SqliteBuilds(db, clock, sequences, corrupt, (diskimage, upTo) => this.intents.clearBuildRequest(diskimage, upTo));
    this.uploads = new SqliteUploads(db, clock, sequences, corrupt, () => this.changes.notify());
    this.nodes = new SqliteNodes(db, clock, sequences, corrupt, (resource) => this.locks.get(resource)?.live === true);
    this.requests = new SqliteRequests(db, clock, sequences, corrupt);
    this.sessions = new SqliteSessions(db, clock, corrupt);
    this.locks = new SqliteLocks(db, clock);
    this.audit = new SqliteAudit(db, sequences, corrupt);
    this.imageData = new SqliteImageData(db, clock);
  }

  closeSession(id: string): void {
    this.sessions.closeSession(id);
  }

  reapSessions(): ReapCounts {
    return this.sessions.reapSessions();
  }

  /**
   * Checks the session and keeps nothing: Nodepool 11's component registry is read only from
   * ZooKeeper (by Nodepool and Zuul), and this file's sessions already name each process.
   */
  publishComponents(sessionId: string, kind: ProcessComponentKind, _components: readonly ComponentInfo[]): void {
    if (!this.sessions.isLive(sessionId)) throw new StoreError(`cannot publish ${kind} components: session ${sessionId} is not live (lapsed, closed or never opened)`);
  }

  installationId(given?: string): string {
    return sqliteInstallationId(this.db, Date.now, given);
  }

  installationPeek(): string | undefined {
    return sqliteInstallationPeek(this.db);
  }

  /** Rows that do not validate (lib/store/corrupt.ts); audit rows only when `kinds` asks for them. */
  corrupt(kinds?: readonly CorruptKind[]): CorruptRecord[] {
    return [
      ...this.builds.corrupt(), ...this.uploads.corrupt(), ...this.intents.corrupt(), ...this.nodes.corrupt(),
      ...this.requests.corrupt(), ...this.sessions.corruptLaunchers(), ...(wantsKind(kinds, 'audit') ? this.audit.corrupt() : []),
    ];
  }

  exportImageData(): ImageData {
    return this.imageData.export();
  }

  importImageData(data: ImageData): ImportCounts {
    return this.imageData.import(data);
  }

  subscribe(listener: () => void): () => void {
    return this.changes.subscribe(listener);
  }

  notify(): void {
    this.changes.notify();
  }

  /** Closes the database (checkpointing the WAL when this is the last connection). */
  async close(): Promise<void> {
    this.changes.stop();
    try {
      this.db.close();
    } catch (cause) {
      throw new StoreError(`closing state database ${this.file}: ${coerceError(cause).message}`, { cause });
    }
  }
}
