/**
 * The `nodes` table: synchronous operations the SQLite store wraps in async methods.
 * Node ids come from one store-wide sequence, allocated in the inserting transaction; one
 * table of columns ({@link NODE_COLUMNS}) drives both inserts and patches.
 */
import { isDeepStrictEqual } from 'node:util';
import type Database from 'better-sqlite3';
import { StateConflictError, StoreError } from '../../errors.js';
import { nodeLock } from '../lock-names.js';
import { CorruptLog, type CorruptRecord } from '../corrupt.js';
import { NODE_DEFAULTS, type NewNode, type NodePatch, type NodeRecord, type NodeState } from '../models.js';
import type { ExpectState, IdleDelete, NodeClaim, NodeFilter } from '../store.js';
import { checkStringList } from '../checks.js';
import { checkedRows, corruptRows, placeholders } from './columns.js';
import { checkNodeState } from '../checks.js';
import { NODE_COLUMNS, nodeColumnValue, nodeFromRow, type NodeFields, type NodeRow } from './node-rows.js';
import type { Sequences } from './sequences.js';
import { immediate, type SqlValue, StatementCache, whereClause } from './statements.js';

/** Sequence name of nodes (one for the whole store). */
export const NODE_SEQUENCE = 'node';

/** Formats a node id: the sequence as 10 digits. */
export function formatNodeId(sequence: number): string {
  return String(sequence).padStart(10, '0');
}

const FIELDS = Object.keys(NODE_COLUMNS) as Array<keyof NodeFields>;

/** The value a new node starts with in `field`: the input's, else the default. */
function initialValue(input: NewNode, field: keyof NodeFields): unknown {
  const given = input[field];
  return given !== undefined ? given : (NODE_DEFAULTS as Partial<NodeFields>)[field];
}

/** `v` when it is a non-empty string (a column of a corrupt row may hold anything), else null. */
function nonEmpty(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Nodes in a SQLite database. */
export class SqliteNodes {
  private readonly stmts: StatementCache;
  private readonly getStmt: Database.Statement<[string], NodeRow>;
  private readonly insertStmt: Database.Statement<SqlValue[]>;
  private readonly deleteStmt: Database.Statement<[string]>;
  private readonly deleteLockStmt: Database.Statement<[string]>;
  private readonly createTx: (input: NewNode) => NodeRecord;
  private readonly updateTx: (id: string, patch: NodePatch, expect: readonly NodeState[] | undefined) => NodeRecord | undefined;
  private readonly deleteTx: (id: string) => boolean;
  private readonly deleteIdleTx: (seen: NodeRecord) => IdleDelete;

  constructor(db: Database.Database, private readonly clock: () => number, private readonly sequences: Sequences,
    private readonly corruptLog = new CorruptLog(undefined),
    /** Whether a live session holds the lock of `resource` (SqliteLocks.get's `live`). */
    private readonly lockHeld: (resource: string) => boolean = () => false) {
    this.stmts = new StatementCache(db);
    this.getStmt = db.prepare<[string], NodeRow>('SELECT * FROM nodes WHERE id = ?');
    const columns = FIELDS.map((f) => NODE_COLUMNS[f][0]);
    this.insertStmt = db.prepare<SqlValue[]>(`
      INSERT INTO nodes (id, state_time, created, ${columns.join(', ')})
      VALUES ${placeholders(columns.length + 3)}`);
    this.deleteStmt = db.prepare<[string]>('DELETE FROM nodes WHERE id = ?');
    this.deleteLockStmt = db.prepare<[string]>('DELETE FROM locks WHERE resource = ?');
    this.createTx = immediate(db, (input: NewNode) => this.createNow(input));
    this.updateTx = immediate(db, (id: string, patch: NodePatch, expect: readonly NodeState[] | undefined) => this.updateNow(id, patch, expect));
    this.deleteTx = immediate(db, (id: string) => this.deleteNow(id));
    this.deleteIdleTx = immediate(db, (seen: NodeRecord) => this.deleteIdleNow(seen));
  }

  /** Creates a node with the next node id; fields NewNode leaves out start empty. */
  create(input: NewNode): NodeRecord {
    return this.createTx(input);
  }

  /** The node, or undefined. */
  get(id: string): NodeRecord | undefined {
    const row = this.getStmt.get(id);
    return row ? nodeFromRow(row) : undefined;
  }

  /** Nodes matching `filter`, ordered by id. */
  list(filter: NodeFilter = {}): NodeRecord[] {
    const parts: Array<[string, ...SqlValue[]]> = [];
    if (filter.provider !== undefined) parts.push(['provider = ?', filter.provider]);
    if (filter.pool !== undefined) parts.push(['pool = ?', filter.pool]);
    if (filter.allocatedTo !== undefined) parts.push(['allocated_to = ?', filter.allocatedTo]);
    if (filter.states !== undefined) {
      if (filter.states.length === 0) return [];
      parts.push([`state IN ${placeholders(filter.states.length)}`, ...filter.states]);
    }
    // Last, so the indexed conditions narrow the rows whose labels are parsed.
    if (filter.label !== undefined) parts.push(['EXISTS (SELECT 1 FROM json_each(nodes.labels) WHERE json_each.value = ?)', filter.label]);
    const where = whereClause(parts);
    const rows = this.stmts.get(`SELECT * FROM nodes${where.sql} ORDER BY id`).all(...where.params) as NodeRow[];
    return checkedRows(rows, nodeFromRow, this.corruptLog);
  }

  /** The nodes whose rows do not validate, by id. */
  corrupt(): CorruptRecord[] {
    return corruptRows(this.stmts.get('SELECT * FROM nodes ORDER BY id').all() as NodeRow[], nodeFromRow);
  }

  /**
   * The nodes whose rows do not validate, with what each row still names: its external id and
   * provider when those columns hold strings (a row is columns, so they read past a bad state or
   * time). Leak cleanup counts these as covering (CorruptStore.listCorruptNodes).
   */
  corruptClaims(): NodeClaim[] {
    const rows = this.stmts.get('SELECT * FROM nodes ORDER BY id').all() as NodeRow[];
    const bad = new Set(corruptRows(rows, nodeFromRow).map((c) => c.id));
    return rows.filter((r) => bad.has(r.id)).map((r) => ({
      id: r.id, externalId: nonEmpty(r.external_id), provider: typeof r.provider === 'string' ? r.provider : null,
    }));
  }

  /** Applies `patch`; undefined for an unknown id. Thrown: StateConflictError (nothing changed). */
  update(id: string, patch: NodePatch, opts: ExpectState<NodeState> = {}): NodeRecord | undefined {
    return this.updateTx(id, patch, opts.expectStates);
  }

  /** Removes the node and its lock; false when there was no node. */
  delete(id: string): boolean {
    return this.deleteTx(id);
  }

  private createNow(input: NewNode): NodeRecord {
    checkNodeState(input.state, `creating a node on ${input.provider}`);
    checkStringList(input.labels, `creating a node on ${input.provider}: labels`);
    const now = this.clock();
    const id = formatNodeId(this.sequences.next(NODE_SEQUENCE));
    const what = `node ${id}`;
    this.insertStmt.run(id, now, now, ...FIELDS.map((f) => nodeColumnValue(f, initialValue(input, f), what)));
    return this.mustGet(id);
  }

  private updateNow(id: string, patch: NodePatch, expect: readonly NodeState[] | undefined): NodeRecord | undefined {
    const row = this.getStmt.get(id);
    if (!row) return undefined;
    nodeFromRow(row); // a corrupt record is not updated (CorruptRecordError), only deleted
    if (expect && !expect.includes(row.state as NodeState)) {
      throw new StateConflictError(id, row.state, `node ${id} is ${row.state}, expected ${expect.join(' or ') || 'no state at all'}`);
    }
    const what = `node ${id}`;
    const set: Array<[string, SqlValue]> = [];
    for (const field of FIELDS) {
      const value = patch[field];
      if (value === undefined) continue;
      if (field === 'state') {
        checkNodeState(value as string, `updating ${what}`);
        if (value !== row.state) set.push(['state', value as string], ['state_time', this.clock()]);
        continue;
      }
      if (field === 'labels') checkStringList(value, `updating ${what}: labels`);
      set.push([NODE_COLUMNS[field][0], nodeColumnValue(field, value, what)]);
    }
    if (set.length > 0) {
      this.stmts.get(`UPDATE nodes SET ${set.map(([col]) => `${col} = ?`).join(', ')} WHERE id = ?`)
        .run(...set.map(([, v]) => v), id);
    }
    return this.mustGet(id);
  }

  /** As NodeStore.deleteNodeIfIdle: the record compared and removed in one transaction. */
  deleteIfIdle(seen: NodeRecord): IdleDelete {
    return this.deleteIdleTx(seen);
  }

  private deleteIdleNow(seen: NodeRecord): IdleDelete {
    const row = this.getStmt.get(seen.id);
    if (!row) return 'gone';
    if (!isDeepStrictEqual(nodeFromRow(row), seen)) return 'changed';
    // A lock of a lapsed session is stale (the next tryLock would take it over): no holder.
    if (this.lockHeld(nodeLock(seen.id))) return 'locked';
    this.deleteNow(seen.id);
    return 'deleted';
  }

  private deleteNow(id: string): boolean {
    this.deleteLockStmt.run(nodeLock(id));
    return this.deleteStmt.run(id).changes > 0;
  }

  private mustGet(id: string): NodeRecord {
    const rec = this.get(id);
    if (!rec) throw new StoreError(`node ${id} vanished inside its own transaction`);
    return rec;
  }
}
