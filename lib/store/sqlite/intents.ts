/**
 * Operator intents (build requests, upload retry requests, pauses; pins and revocations through rollout-intents.ts)
 * and the server's published status, in SQLite. Each operation is one statement, so none needs
 * an explicit transaction.
 */
import type Database from 'better-sqlite3';
import { StoreError } from '../../errors.js';
import { checkDiskimageProvider } from '../checks.js';
import { CorruptLog, Fields, type CorruptRecord } from '../corrupt.js';
import type { BuildRequest, PauseRecord, PinRecord, RevocationRecord, UploadRetryRequest } from '../models.js';
import { toJson } from '../to-json.js';
import { checkedRows, corruptRows, fromJson, skippingCorrupt } from './columns.js';
import { pauseFromRow, pauseFromRowLenient, WHOLE_DISKIMAGE, type PauseRow } from './image-rows.js';
import { SqliteRolloutIntents } from './rollout-intents.js';

/** A build request row. Thrown: CorruptRecordError when `requested` is not a time. */
function buildRequestFromRow(r: BuildRequest): BuildRequest {
  const f: Fields = new Fields(r as unknown as Record<string, unknown>, 'build-request', r.diskimage);
  if (typeof r.requested !== 'number' || !Number.isFinite(r.requested)) f.fail('requested is not a time');
  return { diskimage: r.diskimage, requested: r.requested };
}

/** An upload retry request row. Thrown: CorruptRecordError when `requested` is not a time. */
function uploadRetryFromRow(r: UploadRetryRequest): UploadRetryRequest {
  const f: Fields = new Fields(r as unknown as Record<string, unknown>, 'upload-retry', `${r.diskimage}/${r.provider}`);
  if (typeof r.requested !== 'number' || !Number.isFinite(r.requested)) f.fail('requested is not a time');
  return { diskimage: r.diskimage, provider: r.provider, requested: r.requested };
}

interface StatusRow {
  value: string;
  updated: number;
}

/** Build requests, pauses and status values in a SQLite database. */
export class SqliteIntents {
  private readonly requestStmt: Database.Statement<[string, number], BuildRequest>;
  private readonly listRequestsStmt: Database.Statement<[], BuildRequest>;
  private readonly clearRequestStmt: Database.Statement<[string, number]>;
  private readonly retryStmt: Database.Statement<[string, string, number], UploadRetryRequest>;
  private readonly listRetriesStmt: Database.Statement<[], UploadRetryRequest>;
  private readonly clearRetryStmt: Database.Statement<[string, string, number]>;
  private readonly pauseStmt: Database.Statement<[string, string, number, string | null]>;
  private readonly unpauseStmt: Database.Statement<[string, string]>;
  private readonly listPausesStmt: Database.Statement<[], PauseRow>;
  private readonly putStatusStmt: Database.Statement<[string, string, number]>;
  private readonly getStatusStmt: Database.Statement<[string], StatusRow>;
  private readonly rollout: SqliteRolloutIntents;

  /** `changed` tells this process's change listeners of a pin or revocation written here. */
  constructor(db: Database.Database, private readonly clock: () => number, private readonly corruptLog = new CorruptLog(undefined),
    changed: () => void = () => undefined) {
    this.rollout = new SqliteRolloutIntents(db, clock, corruptLog, changed);
    this.requestStmt = db.prepare<[string, number], BuildRequest>(`
      INSERT INTO build_requests (diskimage, requested) VALUES (?, ?)
      ON CONFLICT (diskimage) DO UPDATE SET requested = excluded.requested
      RETURNING diskimage, requested`);
    this.listRequestsStmt = db.prepare<[], BuildRequest>('SELECT diskimage, requested FROM build_requests ORDER BY diskimage');
    this.clearRequestStmt = db.prepare<[string, number]>('DELETE FROM build_requests WHERE diskimage = ? AND requested <= ?');
    this.retryStmt = db.prepare<[string, string, number], UploadRetryRequest>(`
      INSERT INTO upload_retries (diskimage, provider, requested) VALUES (?, ?, ?)
      ON CONFLICT (diskimage, provider) DO UPDATE SET requested = excluded.requested
      RETURNING diskimage, provider, requested`);
    this.listRetriesStmt = db.prepare<[], UploadRetryRequest>('SELECT diskimage, provider, requested FROM upload_retries ORDER BY diskimage, provider');
    this.clearRetryStmt = db.prepare<[string, string, number]>('DELETE FROM upload_retries WHERE diskimage = ? AND provider = ? AND requested <= ?');
    // Pausing what is already paused keeps `since` (a corrupt one is replaced); a new reason replaces the old one.
    this.pauseStmt = db.prepare<[string, string, number, string | null]>(`
      INSERT INTO pauses (diskimage, provider, since, reason) VALUES (?, ?, ?, ?)
      ON CONFLICT (diskimage, provider) DO UPDATE SET reason = coalesce(excluded.reason, reason),
        since = CASE WHEN typeof(since) IN ('integer', 'real') THEN since ELSE excluded.since END`);
    this.unpauseStmt = db.prepare<[string, string]>('DELETE FROM pauses WHERE diskimage = ? AND provider = ?');
    this.listPausesStmt = db.prepare<[], PauseRow>('SELECT * FROM pauses ORDER BY diskimage, provider');
    this.putStatusStmt = db.prepare<[string, string, number]>(`
      INSERT INTO status (key, value, updated) VALUES (?, ?, ?)
      ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated`);
    this.getStatusStmt = db.prepare<[string], StatusRow>('SELECT value, updated FROM status WHERE key = ?');
  }

  /** Records (or refreshes) a build request; `requested` is now. */
  requestBuild(diskimage: string): BuildRequest {
    const row = this.requestStmt.get(diskimage, this.clock());
    if (!row) throw new StoreError(`build request for ${diskimage} was not recorded`);
    return { diskimage: row.diskimage, requested: row.requested };
  }

  /** Every build request, by diskimage. */
  listBuildRequests(): BuildRequest[] {
    return checkedRows(this.listRequestsStmt.all(), buildRequestFromRow, this.corruptLog, (r) => ({ diskimage: r.diskimage }));
  }

  /** Removes the request when it was made at or before `requestedUpTo`. */
  clearBuildRequest(diskimage: string, requestedUpTo: number): void {
    this.clearRequestStmt.run(diskimage, requestedUpTo);
  }

  /** Records (or refreshes) a request to retry `diskimage`'s failed uploads to `provider`; `requested` is now. */
  requestUploadRetry(diskimage: string, provider: string): UploadRetryRequest {
    checkDiskimageProvider(diskimage, provider, `requesting an upload retry of ${diskimage} on ${provider}`);
    const row = this.retryStmt.get(diskimage, provider, this.clock());
    if (!row) throw new StoreError(`upload retry request for ${diskimage} on ${provider} was not recorded`);
    return { diskimage: row.diskimage, provider: row.provider, requested: row.requested };
  }

  /** Every upload retry request, by diskimage then provider; corrupt ones are skipped (and logged). */
  listUploadRetries(): UploadRetryRequest[] {
    return skippingCorrupt(this.listRetriesStmt.all(), uploadRetryFromRow, this.corruptLog);
  }

  /** Removes the request when it was made at or before `requestedUpTo`. */
  clearUploadRetry(diskimage: string, provider: string, requestedUpTo: number): void {
    this.clearRetryStmt.run(diskimage, provider, requestedUpTo);
  }

  /** Pauses or unpauses a diskimage (`provider` null) or its uploads to one provider. */
  setPause(diskimage: string, provider: string | null, paused: boolean, reason?: string): void {
    if (provider === WHOLE_DISKIMAGE) throw new StoreError(`pausing ${diskimage}: provider must be null or a non-empty name`);
    const key = provider ?? WHOLE_DISKIMAGE;
    if (paused) this.pauseStmt.run(diskimage, key, this.clock(), reason ?? null);
    else this.unpauseStmt.run(diskimage, key);
  }

  /**
   * Every pause, by diskimage then provider (diskimage-wide first). A corrupt one still pauses
   * (its row is the operator's intent), with `since` 0 and a reason saying it is corrupt.
   */
  listPauses(): PauseRecord[] {
    return this.listPausesStmt.all().map((r) => {
      const { pause, corrupt } = pauseFromRowLenient(r);
      if (corrupt) this.corruptLog.report(corrupt, JSON.stringify(r));
      return pause;
    });
  }

  /** As SqliteRolloutIntents.setPin. */
  setPin(diskimage: string, provider: string | null, buildId: string | null, reason?: string): PinRecord | null {
    return this.rollout.setPin(diskimage, provider, buildId, reason);
  }

  listPins(): PinRecord[] {
    return this.rollout.listPins();
  }

  /** As SqliteRolloutIntents.setRevocation. */
  setRevocation(diskimage: string, buildId: string, revoked: boolean, reason?: string): void {
    this.rollout.setRevocation(diskimage, buildId, revoked, reason);
  }

  listRevocations(): RevocationRecord[] {
    return this.rollout.listRevocations();
  }

  /** Corrupt build requests, upload retry requests, pauses, pins and revocations, by diskimage. */
  corrupt(): CorruptRecord[] {
    return [
      ...corruptRows(this.listRequestsStmt.all(), buildRequestFromRow, (r) => ({ diskimage: r.diskimage })),
      ...corruptRows(this.listRetriesStmt.all(), uploadRetryFromRow, (r) => ({ diskimage: r.diskimage, provider: r.provider })),
      ...corruptRows(this.listPausesStmt.all(), pauseFromRow, (r) => ({ diskimage: r.diskimage, provider: r.provider === WHOLE_DISKIMAGE ? null : r.provider })),
      ...this.rollout.corrupt(),
    ];
  }

  /** Stores `value` as JSON under `key`, stamped with the clock. */
  putStatus(key: string, value: unknown): void {
    this.putStatusStmt.run(key, toJson(value, `status ${key}`), this.clock());
  }

  /** The value under `key` with when it was stored, or undefined. */
  getStatus<T>(key: string): { value: T; updated: number } | undefined {
    const row = this.getStatusStmt.get(key);
    return row ? { value: fromJson<T>(row.value, `status ${key}`), updated: row.updated } : undefined;
  }
}
