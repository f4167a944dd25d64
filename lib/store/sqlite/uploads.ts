/**
 * The `uploads` table: synchronous operations the SQLite store wraps in async methods.
 * Upload ids come from one store-wide sequence, allocated in the inserting transaction.
 */
import { uploadImageFields, type ImageFields } from '../image-fields.js';
import type Database from 'better-sqlite3';
import { StateConflictError, StoreError } from '../../errors.js';
import { CorruptLog, type CorruptRecord } from '../corrupt.js';
import type { LaunchResult, NewUpload, UploadPatch, UploadRecord, UploadState } from '../models.js';
import type { ExpectRollout, ExpectState, UploadFilter } from '../store.js';
import { holdsRolloutSnapshot } from '../rollout-snapshot.js';
import { checkedRows, corruptRows, placeholders, toJsonOrNull } from './columns.js';
import { checkRolloutPatch, checkUploadState } from '../checks.js';
import { buildFromRow, imageFieldsValue, uploadFromRow, type BuildRow, type UploadRow } from './image-rows.js';
import { UPLOAD_SEQUENCE, type Sequences } from './sequences.js';
import { immediate, type SqlValue, StatementCache, whereClause } from './statements.js';

/** Formats an upload id: the sequence as 10 digits. */
export function formatUploadId(sequence: number): string {
  return String(sequence).padStart(10, '0');
}

/** Uploads in a SQLite database. */
export class SqliteUploads {
  private readonly stmts: StatementCache;
  private readonly getStmt: Database.Statement<[string], UploadRow>;
  private readonly buildDiskimageStmt: Database.Statement<[string], string>;
  private readonly buildImageFieldsStmt: Database.Statement<[string], BuildRow>;
  private readonly insertStmt: Database.Statement<SqlValue[]>;
  private readonly deleteStmt: Database.Statement<[string]>;
  private readonly launchStmt: Database.Statement<[string], UploadRow>;
  private readonly launchFailureStmt: Database.Statement<[string], UploadRow>;
  private readonly createTx: (input: NewUpload) => UploadRecord;
  private readonly updateTx: (id: string, patch: UploadPatch, opts: ExpectState<UploadState> & ExpectRollout) => UploadRecord | undefined;

  /** `changed` tells this process's change listeners of a rollout decision written here. */
  constructor(db: Database.Database, private readonly clock: () => number, private readonly sequences: Sequences,
    private readonly corruptLog = new CorruptLog(undefined), private readonly changed: () => void = () => undefined) {
    this.stmts = new StatementCache(db);
    this.getStmt = db.prepare<[string], UploadRow>('SELECT * FROM uploads WHERE id = ?');
    this.buildDiskimageStmt = db.prepare<[string], string>('SELECT diskimage FROM builds WHERE id = ?').pluck();
    this.buildImageFieldsStmt = db.prepare<[string], BuildRow>('SELECT * FROM builds WHERE id = ?');
    this.insertStmt = db.prepare<SqlValue[]>(`
      INSERT INTO uploads (id, build_id, diskimage, provider, image_name, state, state_time, created,
                           external_id, external_name, format, reason, progress, image_fields)
      VALUES (?, ?, ?, ?, ?, 'uploading', ?, ?, NULL, ?, NULL, NULL, NULL, ?)`);
    this.deleteStmt = db.prepare<[string]>('DELETE FROM uploads WHERE id = ?');
    // One statement each: the count goes up atomically against every other connection.
    this.launchStmt = db.prepare<[string], UploadRow>('UPDATE uploads SET launches = launches + 1 WHERE id = ? RETURNING *');
    this.launchFailureStmt = db.prepare<[string], UploadRow>('UPDATE uploads SET launch_failures = launch_failures + 1 WHERE id = ? RETURNING *');
    this.createTx = immediate(db, (input: NewUpload) => this.createNow(input));
    this.updateTx = immediate(db, (id: string, patch: UploadPatch, opts: ExpectState<UploadState> & ExpectRollout) => this.updateNow(id, patch, opts));
  }

  /** Creates an upload in state `uploading` with the next upload id. Thrown: StoreError for an unknown build. */
  create(input: NewUpload): UploadRecord {
    return this.createTx(input);
  }

  /** The upload, or undefined. */
  get(id: string): UploadRecord | undefined {
    const row = this.getStmt.get(id);
    return row ? uploadFromRow(row) : undefined;
  }

  /** Uploads matching `filter`, ordered by diskimage, provider, then id. */
  list(filter: UploadFilter = {}): UploadRecord[] {
    const parts: Array<[string, ...SqlValue[]]> = [];
    if (filter.buildId !== undefined) parts.push(['build_id = ?', filter.buildId]);
    if (filter.provider !== undefined) parts.push(['provider = ?', filter.provider]);
    if (filter.diskimage !== undefined) parts.push(['diskimage = ?', filter.diskimage]);
    if (filter.states !== undefined) {
      if (filter.states.length === 0) return [];
      parts.push([`state IN ${placeholders(filter.states.length)}`, ...filter.states]);
    }
    const where = whereClause(parts);
    const rows = this.stmts.get(`SELECT * FROM uploads${where.sql} ORDER BY diskimage, provider, id`).all(...where.params) as UploadRow[];
    return checkedRows(rows, uploadFromRow, this.corruptLog, (r) => ({ diskimage: r.diskimage, provider: r.provider }));
  }

  /** The uploads whose rows do not validate, by diskimage, provider, then id. */
  corrupt(): CorruptRecord[] {
    const rows = this.stmts.get('SELECT * FROM uploads ORDER BY diskimage, provider, id').all() as UploadRow[];
    return corruptRows(rows, uploadFromRow, (r) => ({ diskimage: r.diskimage, provider: r.provider }));
  }

  /**
   * Applies `patch` (`rollout` null clears the decision); undefined for an unknown id.
   * Thrown: StateConflictError (nothing changed); StoreError for rollout fields no record may hold.
   */
  update(id: string, patch: UploadPatch, opts: ExpectState<UploadState> & ExpectRollout = {}): UploadRecord | undefined {
    checkRolloutPatch(patch, `updating upload ${id}`);
    const updated = this.updateTx(id, patch, opts);
    if (updated && patch.rollout !== undefined) this.changed();
    return updated;
  }

  /** Counts one launch from upload `id` (launches or launchFailures + 1); undefined when it is gone. */
  recordLaunch(id: string, result: LaunchResult): UploadRecord | undefined {
    const row = (result === 'success' ? this.launchStmt : this.launchFailureStmt).get(id);
    return row ? uploadFromRow(row) : undefined;
  }

  /** Removes the upload; false when there was none. */
  delete(id: string): boolean {
    return this.deleteStmt.run(id).changes > 0;
  }

  private createNow(input: NewUpload): UploadRecord {
    const diskimage = this.buildDiskimageStmt.get(input.buildId);
    if (diskimage === undefined) {
      throw new StoreError(`cannot create an upload of build ${input.buildId} to ${input.provider}: no such build`);
    }
    const now = this.clock();
    const id = formatUploadId(this.sequences.next(UPLOAD_SEQUENCE));
    this.insertStmt.run(id, input.buildId, diskimage, input.provider, input.imageName, now, now, input.externalName ?? null,
      imageFieldsValue(this.imageFieldsFor(input), `upload ${id}`));
    return this.mustGet(id);
  }

  /** Nodepool 11's image fields of a new upload (lib/store/image-fields.ts); a corrupt build record says nothing of them. */
  private imageFieldsFor(input: NewUpload): ImageFields {
    let build: ImageFields = {};
    try {
      const row = this.buildImageFieldsStmt.get(input.buildId);
      if (row) build = buildFromRow(row);
    } catch {
      // a corrupt build record: the upload says nothing of it
    }
    return uploadImageFields(input, build);
  }

  private updateNow(id: string, patch: UploadPatch, opts: ExpectState<UploadState> & ExpectRollout): UploadRecord | undefined {
    const row = this.getStmt.get(id);
    if (!row) return undefined;
    const current = uploadFromRow(row); // a corrupt record is not updated (CorruptRecordError), only deleted
    const expect = opts.expectStates;
    if (expect && !expect.includes(row.state as UploadState)) {
      throw new StateConflictError(id, row.state, `upload ${id} is ${row.state}, expected ${expect.join(' or ') || 'no state at all'}`);
    }
    if (opts.expectRollout && !holdsRolloutSnapshot(current, opts.expectRollout)) {
      throw new StateConflictError(id, row.state, `upload ${id}: its launch counts or rollout decision changed since they were read`);
    }
    const set: Array<[string, SqlValue]> = [];
    if (patch.state !== undefined) {
      checkUploadState(patch.state, `updating upload ${id}`);
      if (patch.state !== row.state) set.push(['state', patch.state], ['state_time', this.clock()]);
    }
    if (patch.externalId !== undefined) set.push(['external_id', patch.externalId]);
    if (patch.externalName !== undefined) set.push(['external_name', patch.externalName]);
    if (patch.format !== undefined) set.push(['format', patch.format]);
    if (patch.reason !== undefined) set.push(['reason', patch.reason]);
    if (patch.progress !== undefined) set.push(['progress', toJsonOrNull(patch.progress, `upload ${id} progress`)]);
    if (patch.launches !== undefined) set.push(['launches', patch.launches]);
    if (patch.launchFailures !== undefined) set.push(['launch_failures', patch.launchFailures]);
    if (patch.rollout !== undefined) {
      const r = patch.rollout;
      set.push(['rollout_state', r?.state ?? null], ['rollout_time', r?.time ?? null], ['rollout_reason', r?.reason ?? null]);
    }
    if (set.length > 0) {
      this.stmts.get(`UPDATE uploads SET ${set.map(([col]) => `${col} = ?`).join(', ')} WHERE id = ?`)
        .run(...set.map(([, v]) => v), id);
    }
    return this.mustGet(id);
  }

  private mustGet(id: string): UploadRecord {
    const rec = this.get(id);
    if (!rec) throw new StoreError(`upload ${id} vanished inside its own transaction`);
    return rec;
  }
}
