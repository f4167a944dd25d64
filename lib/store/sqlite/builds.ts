/**
 * The `builds` table: synchronous operations the SQLite store wraps in async methods.
 * Writes run in BEGIN IMMEDIATE transactions so two processes never race a read-modify-write.
 */
import type Database from 'better-sqlite3';
import { StateConflictError, StoreError } from '../../errors.js';
import { formatImageId } from '../../images/image-file.js';
import { CorruptLog, type CorruptRecord } from '../corrupt.js';
import type { BuildPatch, BuildRecord, BuildState, NewBuild } from '../models.js';
import type { ExpectState, BuildFilter } from '../store.js';
import { toJson } from '../to-json.js';
import { checkedRows, corruptRows, placeholders, toJsonOrNull } from './columns.js';
import { checkBuildState, checkLogToken, checkLogUrl } from '../checks.js';
import { buildFromRow, imageFieldsValue, type BuildRow } from './image-rows.js';
import { buildSequence, type Sequences } from './sequences.js';
import { immediate, type SqlValue, StatementCache, whereClause } from './statements.js';

/** Builds in a SQLite database. */
export class SqliteBuilds {
  private readonly stmts: StatementCache;
  private readonly getStmt: Database.Statement<[string], BuildRow>;
  private readonly tokenStmt: Database.Statement<[string], string | null>;
  private readonly insertStmt: Database.Statement<SqlValue[]>;
  private readonly uploadIdsStmt: Database.Statement<[string], string>;
  private readonly deleteStmt: Database.Statement<[string]>;
  private readonly createTx: (input: NewBuild) => BuildRecord;
  private readonly updateTx: (id: string, patch: BuildPatch, expect: readonly BuildState[] | undefined) => BuildRecord | undefined;
  private readonly deleteTx: (id: string) => boolean;

  /** `clearRequests` removes the build requests a new build serves, inside its transaction (`servesRequestsUpTo`). */
  constructor(db: Database.Database, private readonly clock: () => number, private readonly sequences: Sequences,
    private readonly corruptLog = new CorruptLog(undefined),
    private readonly clearRequests: (diskimage: string, requestedUpTo: number) => void = () => undefined) {
    this.stmts = new StatementCache(db);
    this.getStmt = db.prepare<[string], BuildRow>('SELECT * FROM builds WHERE id = ?');
    this.insertStmt = db.prepare<SqlValue[]>(`
      INSERT INTO builds (id, diskimage, state, state_time, created, builder_hostname, builder_id, formats, files, reason, progress, image_fields, log_token)
      VALUES (?, ?, 'building', ?, ?, NULL, NULL, ?, '[]', NULL, NULL, ?, ?)`);
    this.tokenStmt = db.prepare<[string], string | null>('SELECT log_token FROM builds WHERE id = ?').pluck();
    this.uploadIdsStmt = db.prepare<[string], string>('SELECT id FROM uploads WHERE build_id = ? ORDER BY id').pluck();
    this.deleteStmt = db.prepare<[string]>('DELETE FROM builds WHERE id = ?');
    this.createTx = immediate(db, (input: NewBuild) => this.createNow(input));
    this.updateTx = immediate(db, (id: string, patch: BuildPatch, expect: readonly BuildState[] | undefined) => this.updateNow(id, patch, expect));
    this.deleteTx = immediate(db, (id: string) => this.deleteNow(id));
  }

  /** Creates a build in state `building` with its diskimage's next id (and clears the build requests it serves). */
  create(input: NewBuild): BuildRecord {
    return this.createTx(input);
  }

  /** The build, or undefined. */
  get(id: string): BuildRecord | undefined {
    const row = this.getStmt.get(id);
    return row ? buildFromRow(row) : undefined;
  }

  /** The build's log token, or undefined (no build, or one recorded without a token). */
  logToken(id: string): string | undefined {
    const v = this.tokenStmt.get(id);
    return typeof v === 'string' ? v : undefined;
  }

  /** Builds matching `filter`, ordered by diskimage, then id. */
  list(filter: BuildFilter = {}): BuildRecord[] {
    const parts: Array<[string, ...SqlValue[]]> = [];
    if (filter.diskimage !== undefined) parts.push(['diskimage = ?', filter.diskimage]);
    if (filter.states !== undefined) {
      if (filter.states.length === 0) return [];
      parts.push([`state IN ${placeholders(filter.states.length)}`, ...filter.states]);
    }
    const where = whereClause(parts);
    const rows = this.stmts.get(`SELECT * FROM builds${where.sql} ORDER BY diskimage, id`).all(...where.params) as BuildRow[];
    return checkedRows(rows, buildFromRow, this.corruptLog, (r) => ({ diskimage: r.diskimage }));
  }

  /** The builds whose rows do not validate, by diskimage then id. */
  corrupt(): CorruptRecord[] {
    const rows = this.stmts.get('SELECT * FROM builds ORDER BY diskimage, id').all() as BuildRow[];
    return corruptRows(rows, buildFromRow, (r) => ({ diskimage: r.diskimage }));
  }

  /** Applies `patch`; undefined for an unknown id. Thrown: StateConflictError (nothing changed). */
  update(id: string, patch: BuildPatch, opts: ExpectState<BuildState> = {}): BuildRecord | undefined {
    return this.updateTx(id, patch, opts.expectStates);
  }

  /** Removes the build; false when there was none. Thrown: StoreError while uploads remain. */
  delete(id: string): boolean {
    return this.deleteTx(id);
  }

  private createNow(input: NewBuild): BuildRecord {
    const now = this.clock();
    const skip = new Set(input.skipIds ?? []);
    let id: string;
    do id = formatImageId(input.diskimage, this.sequences.next(buildSequence(input.diskimage)));
    while (skip.has(id));
    this.insertStmt.run(id, input.diskimage, now, now, toJson(input.formats, `build ${id} formats`), imageFieldsValue(input, `build ${id}`), checkLogToken(input.logToken, `creating ${id}`));
    if (input.servesRequestsUpTo !== undefined) this.clearRequests(input.diskimage, input.servesRequestsUpTo);
    return this.mustGet(id);
  }

  private updateNow(id: string, patch: BuildPatch, expect: readonly BuildState[] | undefined): BuildRecord | undefined {
    const row = this.getStmt.get(id);
    if (!row) return undefined;
    buildFromRow(row); // a corrupt build is not updated (CorruptRecordError), only deleted
    if (expect && !expect.includes(row.state as BuildState)) {
      throw new StateConflictError(id, row.state, `build ${id} is ${row.state}, expected ${expect.join(' or ') || 'no state at all'}`);
    }
    const set: Array<[string, SqlValue]> = [];
    const what = `build ${id}`;
    if (patch.state !== undefined) {
      checkBuildState(patch.state, `updating ${what}`);
      if (patch.state !== row.state) set.push(['state', patch.state], ['state_time', this.clock()]);
    }
    if (patch.builderHostname !== undefined) set.push(['builder_hostname', patch.builderHostname]);
    if (patch.builderId !== undefined) set.push(['builder_id', patch.builderId]);
    if (patch.formats !== undefined) set.push(['formats', toJson(patch.formats, `${what} formats`)]);
    if (patch.files !== undefined) set.push(['files', toJson(patch.files, `${what} files`)]);
    if (patch.reason !== undefined) set.push(['reason', patch.reason]);
    if (patch.progress !== undefined) set.push(['progress', toJsonOrNull(patch.progress, `${what} progress`)]);
    if (patch.logUrl !== undefined) set.push(['log_url', checkLogUrl(patch.logUrl, `updating ${what}`)]);
    if (set.length > 0) {
      this.stmts.get(`UPDATE builds SET ${set.map(([col]) => `${col} = ?`).join(', ')} WHERE id = ?`)
        .run(...set.map(([, v]) => v), id);
    }
    return this.mustGet(id);
  }

  private deleteNow(id: string): boolean {
    const uploads = this.uploadIdsStmt.all(id);
    if (uploads.length > 0) {
      const shown = uploads.slice(0, 5).join(', ') + (uploads.length > 5 ? ', …' : '');
      throw new StoreError(`cannot delete build ${id}: ${uploads.length} upload record(s) of it remain (${shown}); delete the uploads first`);
    }
    return this.deleteStmt.run(id).changes > 0;
  }

  private mustGet(id: string): BuildRecord {
    const rec = this.get(id);
    if (!rec) throw new StoreError(`build ${id} vanished inside its own transaction`);
    return rec;
  }
}
