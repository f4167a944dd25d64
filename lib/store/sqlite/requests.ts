/**
 * The `node_requests` table: synchronous operations the SQLite store wraps in async methods.
 * A request id is `<priority, 3 digits>-<10-digit sequence>`, so ordering by id serves lower
 * priority values first, then older requests.
 */
import type Database from 'better-sqlite3';
import { StateConflictError, StoreError } from '../../errors.js';
import { CorruptLog, type CorruptRecord } from '../corrupt.js';
import type { NewNodeRequest, NodeRequestPatch, NodeRequestRecord, RequestState } from '../models.js';
import type { ExpectState, RequestFilter } from '../store.js';
import { requestLock } from '../lock-names.js';
import { toJson } from '../to-json.js';
import { checkStringList } from '../checks.js';
import { checkedRows, corruptRows, placeholders } from './columns.js';
import { checkRequestState } from '../checks.js';
import { requestFromRow, type NodeRequestRow } from './node-rows.js';
import { newEventId } from '../request-defaults.js';
import type { Sequences } from './sequences.js';
import { immediate, type SqlValue, StatementCache, whereClause } from './statements.js';

/** Sequence name of node requests (one for the whole store, across priorities). */
export const REQUEST_SEQUENCE = 'request';

/** Priority of a request that names none. */
export const DEFAULT_REQUEST_PRIORITY = 100;

/** Formats a request id from its priority and sequence value. */
export function formatRequestId(priority: number, sequence: number): string {
  return `${String(priority).padStart(3, '0')}-${String(sequence).padStart(10, '0')}`;
}

/** Node requests in a SQLite database. */
export class SqliteRequests {
  private readonly stmts: StatementCache;
  private readonly getStmt: Database.Statement<[string], NodeRequestRow>;
  private readonly insertStmt: Database.Statement<SqlValue[]>;
  private readonly deleteStmt: Database.Statement<[string]>;
  private readonly deleteLockStmt: Database.Statement<[string]>;
  private readonly createTx: (input: NewNodeRequest) => NodeRequestRecord;
  private readonly updateTx: (id: string, patch: NodeRequestPatch, expect: readonly RequestState[] | undefined) => NodeRequestRecord | undefined;
  private readonly deleteTx: (id: string) => boolean;

  constructor(db: Database.Database, private readonly clock: () => number, private readonly sequences: Sequences,
    private readonly corruptLog = new CorruptLog(undefined)) {
    this.stmts = new StatementCache(db);
    this.getStmt = db.prepare<[string], NodeRequestRow>('SELECT * FROM node_requests WHERE id = ?');
    this.insertStmt = db.prepare<SqlValue[]>(`
      INSERT INTO node_requests (id, priority, state, state_time, created, labels, requestor, reuse, provider,
                                 declined_by, nodes, reason, requestor_session, tenant_name, relative_priority, event_id)
      VALUES (?, ?, 'requested', ?, ?, ?, ?, ?, ?, '[]', '[]', NULL, ?, ?, 0, ?)`);
    this.deleteStmt = db.prepare<[string]>('DELETE FROM node_requests WHERE id = ?');
    this.deleteLockStmt = db.prepare<[string]>('DELETE FROM locks WHERE resource = ?');
    this.createTx = immediate(db, (input: NewNodeRequest) => this.createNow(input));
    this.updateTx = immediate(db, (id: string, patch: NodeRequestPatch, expect: readonly RequestState[] | undefined) => this.updateNow(id, patch, expect));
    this.deleteTx = immediate(db, (id: string) => this.deleteNow(id));
  }

  /** Creates a request in state `requested`. Thrown: StoreError for a priority outside 0..999. */
  create(input: NewNodeRequest): NodeRequestRecord {
    return this.createTx(input);
  }

  /** The request, or undefined. */
  get(id: string): NodeRequestRecord | undefined {
    const row = this.getStmt.get(id);
    return row ? requestFromRow(row) : undefined;
  }

  /** Requests matching `filter`, ordered by id (priority, then age). */
  list(filter: RequestFilter = {}): NodeRequestRecord[] {
    const parts: Array<[string, ...SqlValue[]]> = [];
    if (filter.states !== undefined) {
      if (filter.states.length === 0) return [];
      parts.push([`state IN ${placeholders(filter.states.length)}`, ...filter.states]);
    }
    if (filter.requestor !== undefined) parts.push(['requestor = ?', filter.requestor]);
    const where = whereClause(parts);
    const rows = this.stmts.get(`SELECT * FROM node_requests${where.sql} ORDER BY id`).all(...where.params) as NodeRequestRow[];
    return checkedRows(rows, requestFromRow, this.corruptLog);
  }

  /** The requests whose rows do not validate, by id. */
  corrupt(): CorruptRecord[] {
    return corruptRows(this.stmts.get('SELECT * FROM node_requests ORDER BY id').all() as NodeRequestRow[], requestFromRow);
  }

  /** Applies `patch`; undefined for an unknown id. Thrown: StateConflictError (nothing changed). */
  update(id: string, patch: NodeRequestPatch, opts: ExpectState<RequestState> = {}): NodeRequestRecord | undefined {
    return this.updateTx(id, patch, opts.expectStates);
  }

  /** Removes the request and its lock; false when there was no request. */
  delete(id: string): boolean {
    return this.deleteTx(id);
  }

  private createNow(input: NewNodeRequest): NodeRequestRecord {
    const priority = input.priority ?? DEFAULT_REQUEST_PRIORITY;
    if (!Number.isInteger(priority) || priority < 0 || priority > 999) {
      throw new StoreError(`creating a node request for ${input.requestor}: priority must be an integer from 0 to 999, got ${String(priority)}`);
    }
    checkStringList(input.labels, `creating a node request for ${input.requestor}: labels`);
    const now = this.clock();
    const id = formatRequestId(priority, this.sequences.next(REQUEST_SEQUENCE));
    this.insertStmt.run(id, priority, now, now, toJson(input.labels, `node request ${id} labels`), input.requestor,
      input.reuse === false ? 0 : 1, input.provider ?? null, input.requestorSession ?? null, input.tenantName ?? null, newEventId());
    return this.mustGet(id);
  }

  private updateNow(id: string, patch: NodeRequestPatch, expect: readonly RequestState[] | undefined): NodeRequestRecord | undefined {
    const row = this.getStmt.get(id);
    if (!row) return undefined;
    requestFromRow(row); // a corrupt record is not updated (CorruptRecordError), only deleted
    if (expect && !expect.includes(row.state as RequestState)) {
      throw new StateConflictError(id, row.state, `node request ${id} is ${row.state}, expected ${expect.join(' or ') || 'no state at all'}`);
    }
    const what = `node request ${id}`;
    const set: Array<[string, SqlValue]> = [];
    if (patch.state !== undefined) {
      checkRequestState(patch.state, `updating ${what}`);
      if (patch.state !== row.state) set.push(['state', patch.state], ['state_time', this.clock()]);
    }
    if (patch.declinedBy !== undefined) {
      checkStringList(patch.declinedBy, `updating ${what}: declinedBy`);
      set.push(['declined_by', toJson(patch.declinedBy, `${what} declinedBy`)]);
    }
    if (patch.nodes !== undefined) {
      checkStringList(patch.nodes, `updating ${what}: nodes`);
      set.push(['nodes', toJson(patch.nodes, `${what} nodes`)]);
    }
    if (patch.reason !== undefined) set.push(['reason', patch.reason]);
    if (set.length > 0) {
      this.stmts.get(`UPDATE node_requests SET ${set.map(([col]) => `${col} = ?`).join(', ')} WHERE id = ?`)
        .run(...set.map(([, v]) => v), id);
    }
    return this.mustGet(id);
  }

  private deleteNow(id: string): boolean {
    this.deleteLockStmt.run(requestLock(id));
    return this.deleteStmt.run(id).changes > 0;
  }

  private mustGet(id: string): NodeRequestRecord {
    const rec = this.get(id);
    if (!rec) throw new StoreError(`node request ${id} vanished inside its own transaction`);
    return rec;
  }
}
