/**
 * The audit trail of web writes in SQLite (issue 25 §1): the `audit` table, ids from the
 * `audit` sequence. A write is one BEGIN IMMEDIATE transaction: the sequence, the row, and on
 * every AUDIT_PRUNE_EVERYth entry one DELETE of the entries past AUDIT_KEEP (by primary key).
 * An action's outcome is written over its `attempted` row by one UPDATE (so one action is one row).
 */
import type Database from 'better-sqlite3';
import { AUDIT_KEEP, auditFromFields, auditPruneUpTo, auditQuery, checkAuditOutcome, checkNewAudit, formatAuditId } from '../audit.js';
import type { AuditOutcome, AuditRecord, NewAuditRecord } from '../models.js';
import type { CorruptLog, CorruptRecord } from '../corrupt.js';
import { corruptRows, skippingCorrupt } from './columns.js';
import type { Sequences } from './sequences.js';
import { immediate, type SqlValue } from './statements.js';

/** Sequence name of audit entries. */
export const AUDIT_SEQUENCE = 'audit';

/** A row of `audit` (as the record, every column read back unchecked). */
type AuditRow = Record<string, unknown> & { id: string };

/** Audit entries in a SQLite database. */
export class SqliteAudit {
  private readonly insertStmt: Database.Statement<SqlValue[]>;
  private readonly pruneStmt: Database.Statement<[string]>;
  private readonly newestStmt: Database.Statement<[number], AuditRow>;
  private readonly beforeStmt: Database.Statement<[string, number], AuditRow>;
  private readonly allStmt: Database.Statement<[], AuditRow>;
  private readonly recordTx: (e: NewAuditRecord) => AuditRecord;
  private readonly completeStmt: Database.Statement<[number, string, string, string], AuditRow>;

  /** `keep`: entries kept at least (AUDIT_KEEP; smaller only in tests of pruning). */
  constructor(db: Database.Database, private readonly sequences: Sequences, private readonly corruptLog: CorruptLog,
    private readonly keep = AUDIT_KEEP) {
    this.insertStmt = db.prepare<SqlValue[]>(`
      INSERT INTO audit (id, time, user, role, authenticator, action, target, method, path, status, result, message, remote)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.pruneStmt = db.prepare<[string]>('DELETE FROM audit WHERE id <= ?');
    this.newestStmt = db.prepare<[number], AuditRow>('SELECT * FROM audit ORDER BY id DESC LIMIT ?');
    this.beforeStmt = db.prepare<[string, number], AuditRow>('SELECT * FROM audit WHERE id < ? ORDER BY id DESC LIMIT ?');
    this.allStmt = db.prepare<[], AuditRow>('SELECT * FROM audit ORDER BY id');
    this.recordTx = immediate(db, (e: NewAuditRecord) => this.recordNow(e));
    // One statement: the row is changed only while it is still `attempted`, and read back as written.
    this.completeStmt = db.prepare<[number, string, string, string], AuditRow>(
      "UPDATE audit SET status = ?, result = ?, message = ? WHERE id = ? AND result = 'attempted' RETURNING *");
  }

  /**
   * Writes `outcome` over the `attempted` entry `id`; undefined when there is none (pruned, or
   * completed already). Thrown: StoreError for a malformed outcome or id; CorruptRecordError when
   * the row read back does not validate.
   */
  complete(id: string, outcome: AuditOutcome): AuditRecord | undefined {
    checkAuditOutcome(id, outcome);
    const row = this.completeStmt.get(outcome.status, outcome.result, outcome.message, id);
    return row === undefined ? undefined : auditFromFields(row.id, row);
  }

  /** Appends `entry` with the next id (and prunes, every AUDIT_PRUNE_EVERYth entry). Thrown: StoreError for a malformed entry. */
  record(entry: NewAuditRecord): AuditRecord {
    checkNewAudit(entry);
    return this.recordTx(entry);
  }

  /** Entries newest first; corrupt ones are skipped (and logged once), and the page filled from older ones. */
  list(filter?: { limit?: number; before?: string }): AuditRecord[] {
    const q = auditQuery(filter);
    const out: AuditRecord[] = [];
    let before = q.before;
    for (;;) {
      const want = q.limit - out.length;
      const rows = before === undefined ? this.newestStmt.all(want) : this.beforeStmt.all(before, want);
      out.push(...skippingCorrupt(rows, (r) => auditFromFields(r.id, r), this.corruptLog));
      const last = rows[rows.length - 1];
      if (rows.length < want || out.length >= q.limit || last === undefined) return out;
      before = last.id;
    }
  }

  /**
   * The entries that do not validate (kind `audit`, by id). Reads every kept entry: called only
   * when `listCorrupt` asks for audit entries. They have no delete; pruning removes them.
   */
  corrupt(): CorruptRecord[] {
    return corruptRows(this.allStmt.all(), (r) => auditFromFields(r.id, r));
  }

  private recordNow(e: NewAuditRecord): AuditRecord {
    const seq = this.sequences.next(AUDIT_SEQUENCE);
    const id = formatAuditId(seq);
    this.insertStmt.run(id, e.time, e.user, e.role, e.authenticator, e.action, e.target, e.method, e.path, e.status, e.result, e.message, e.remote);
    const upTo = auditPruneUpTo(seq, this.keep);
    if (upTo !== undefined) this.pruneStmt.run(formatAuditId(upTo));
    return auditFromFields(id, { ...e });
  }
}
