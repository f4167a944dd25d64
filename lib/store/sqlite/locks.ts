/**
 * The `locks` table: ZooKeeper's lock recipe without waiting. A lock belongs to a session; once
 * that session lapses the lock is stale and the next tryLock takes it over, all inside one
 * BEGIN IMMEDIATE transaction so two processes never both win.
 */
import type Database from 'better-sqlite3';
import { StoreError } from '../../errors.js';
import type { LockRecord } from '../models.js';
import { lockFromRow, type LockRow } from './session-rows.js';
import { immediate } from './statements.js';

/** `live` of a lock row: whether the holding session exists and is within its TTL at `?`. */
const HOLDER_LIVE = '(s.id IS NOT NULL AND ? - s.renewed <= s.ttl_ms) AS live';

/** Locks in a SQLite database. */
export class SqliteLocks {
  private readonly sessionLiveStmt: Database.Statement<[number, string], number>;
  private readonly holderStmt: Database.Statement<[number, string], { session_id: string; live: number }>;
  private readonly insertStmt: Database.Statement<[string, string, number]>;
  private readonly takeOverStmt: Database.Statement<[string, number, string]>;
  private readonly unlockStmt: Database.Statement<[string, string]>;
  private readonly getStmt: Database.Statement<[number, string], LockRow>;
  private readonly fromStmt: Database.Statement<[number, string], LockRow>;
  private readonly tryLockTx: (resource: string, sessionId: string, exclusive: boolean) => boolean;

  constructor(db: Database.Database, private readonly clock: () => number) {
    this.sessionLiveStmt = db.prepare<[number, string], number>('SELECT ? - renewed <= ttl_ms FROM sessions WHERE id = ?').pluck();
    this.holderStmt = db.prepare<[number, string], { session_id: string; live: number }>(`
      SELECT l.session_id, ${HOLDER_LIVE} FROM locks l LEFT JOIN sessions s ON s.id = l.session_id WHERE l.resource = ?`);
    this.insertStmt = db.prepare<[string, string, number]>('INSERT INTO locks (resource, session_id, acquired) VALUES (?, ?, ?)');
    this.takeOverStmt = db.prepare<[string, number, string]>('UPDATE locks SET session_id = ?, acquired = ? WHERE resource = ?');
    this.unlockStmt = db.prepare<[string, string]>('DELETE FROM locks WHERE resource = ? AND session_id = ?');
    this.getStmt = db.prepare<[number, string], LockRow>(`
      SELECT l.resource, l.session_id, l.acquired, ${HOLDER_LIVE}
      FROM locks l LEFT JOIN sessions s ON s.id = l.session_id WHERE l.resource = ?`);
    // Every resource with a given prefix sorts at or after the prefix, contiguously.
    this.fromStmt = db.prepare<[number, string], LockRow>(`
      SELECT l.resource, l.session_id, l.acquired, ${HOLDER_LIVE}
      FROM locks l LEFT JOIN sessions s ON s.id = l.session_id WHERE l.resource >= ? ORDER BY l.resource`);
    this.tryLockTx = immediate(db, (resource: string, sessionId: string, exclusive: boolean) => this.tryLockNow(resource, sessionId, exclusive));
  }

  /**
   * Takes `resource` for the session: true when taken (or already held by it, unless
   * `exclusive`), false while another live session holds it. Thrown: StoreError when the
   * session is not live.
   */
  tryLock(resource: string, sessionId: string, exclusive = false): boolean {
    return this.tryLockTx(resource, sessionId, exclusive);
  }

  /** Releases the lock if `sessionId` holds it; false otherwise. */
  unlock(resource: string, sessionId: string): boolean {
    return this.unlockStmt.run(resource, sessionId).changes > 0;
  }

  /** The lock on `resource`, or undefined. */
  get(resource: string): LockRecord | undefined {
    const row = this.getStmt.get(this.clock(), resource);
    return row ? lockFromRow(row) : undefined;
  }

  /** Locks whose resource starts with `prefix`, ordered by resource. */
  list(prefix = ''): LockRecord[] {
    const out: LockRecord[] = [];
    for (const row of this.fromStmt.iterate(this.clock(), prefix)) {
      if (!row.resource.startsWith(prefix)) break;
      out.push(lockFromRow(row));
    }
    return out;
  }

  private tryLockNow(resource: string, sessionId: string, exclusive: boolean): boolean {
    const now = this.clock();
    if (this.sessionLiveStmt.get(now, sessionId) !== 1) {
      throw new StoreError(`cannot lock ${resource}: session ${sessionId} is not live (lapsed, closed or never opened)`);
    }
    const holder = this.holderStmt.get(now, resource);
    if (!holder) {
      this.insertStmt.run(resource, sessionId, now);
      return true;
    }
    if (holder.session_id === sessionId) return !exclusive;
    if (holder.live) return false;
    this.takeOverStmt.run(sessionId, now, resource);
    return true;
  }
}
