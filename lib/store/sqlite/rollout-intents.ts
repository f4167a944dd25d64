/**
 * Rollout intents in SQLite (issue 24): pins (`nodepool image-pin`) and revoked builds
 * (`nodepool image-revoke`). Each write is one statement (atomic on its own; a busy database is
 * waited for up to the store's busy timeout, as every write) and tells this process's change
 * listeners, so a launcher here sees it at its next pass; other processes see it through
 * `PRAGMA data_version` (change-watch.ts).
 */
import type Database from 'better-sqlite3';
import { CorruptRecordError } from '../../errors.js';
import { checkBuildOf, checkProviderOrNull } from '../checks.js';
import { CorruptLog, type CorruptRecord } from '../corrupt.js';
import type { PinRecord, RevocationRecord } from '../models.js';
import { checkedRows, corruptRows } from './columns.js';
import { WHOLE_DISKIMAGE } from './image-rows.js';
import { immediate } from './statements.js';
import {
  pinFromRow, pinRowWhere, revocationFromRow, revocationFromRowLenient, type PinRow, type RevocationRow,
} from './rollout-rows.js';

/** Pins and revocations in a SQLite database. */
export class SqliteRolloutIntents {
  private readonly pinStmt: Database.Statement<[string, string, string, number, string | null]>;
  private readonly unpinStmt: Database.Statement<[string, string]>;
  private readonly listPinsStmt: Database.Statement<[], PinRow>;
  private readonly getPinStmt: Database.Statement<[string, string], PinRow>;
  private readonly swapPinTx: (diskimage: string, key: string, buildId: string | null, reason: string | null) => PinRecord | null;
  private readonly revokeStmt: Database.Statement<[string, string, number, string | null]>;
  private readonly unrevokeStmt: Database.Statement<[string, string]>;
  private readonly listRevocationsStmt: Database.Statement<[], RevocationRow>;

  /** `changed` tells this process's change listeners (ChangeWatch.notify). */
  constructor(db: Database.Database, private readonly clock: () => number, private readonly corruptLog = new CorruptLog(undefined),
    private readonly changed: () => void = () => undefined) {
    // Pinning again replaces the build and the reason, and the pin holds from now.
    this.pinStmt = db.prepare<[string, string, string, number, string | null]>(`
      INSERT INTO pins (diskimage, provider, build_id, since, reason) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (diskimage, provider) DO UPDATE SET build_id = excluded.build_id, since = excluded.since, reason = excluded.reason`);
    this.unpinStmt = db.prepare<[string, string]>('DELETE FROM pins WHERE diskimage = ? AND provider = ?');
    this.getPinStmt = db.prepare<[string, string], PinRow>('SELECT * FROM pins WHERE diskimage = ? AND provider = ?');
    // Read and write in one transaction: of two pins at once, exactly one replaces the pin before them.
    this.swapPinTx = immediate(db, (diskimage: string, key: string, buildId: string | null, reason: string | null) => {
      const row = this.getPinStmt.get(diskimage, key);
      let before: PinRecord | null = null;
      try {
        before = row ? pinFromRow(row) : null;
      } catch (err) {
        if (!(err instanceof CorruptRecordError)) throw err; // a corrupt pin is replaced, and was no pin
      }
      if (buildId === null) this.unpinStmt.run(diskimage, key);
      else this.pinStmt.run(diskimage, key, buildId, this.clock(), reason);
      return before;
    });
    this.listPinsStmt = db.prepare<[], PinRow>('SELECT * FROM pins ORDER BY diskimage, provider');
    // Revoking again keeps `since` (a corrupt one is replaced); a new reason replaces the old one.
    this.revokeStmt = db.prepare<[string, string, number, string | null]>(`
      INSERT INTO revocations (diskimage, build_id, since, reason) VALUES (?, ?, ?, ?)
      ON CONFLICT (diskimage, build_id) DO UPDATE SET reason = coalesce(excluded.reason, reason),
        since = CASE WHEN typeof(since) IN ('integer', 'real') THEN since ELSE excluded.since END`);
    this.unrevokeStmt = db.prepare<[string, string]>('DELETE FROM revocations WHERE diskimage = ? AND build_id = ?');
    this.listRevocationsStmt = db.prepare<[], RevocationRow>('SELECT * FROM revocations ORDER BY diskimage, build_id');
  }

  /** Pins `diskimage` (on `provider`, or everywhere when null) to `buildId`; null unpins. Answers the pin replaced or removed (null: none, or a corrupt one). */
  setPin(diskimage: string, provider: string | null, buildId: string | null, reason?: string): PinRecord | null {
    const what = `pinning ${diskimage}`;
    checkProviderOrNull(provider, what);
    if (buildId !== null) checkBuildOf(diskimage, buildId, what);
    const before = this.swapPinTx(diskimage, provider ?? WHOLE_DISKIMAGE, buildId, reason ?? null);
    this.changed();
    return before;
  }

  /** Every pin, by diskimage then provider (diskimage-wide first); corrupt ones are left out (see corrupt()). */
  listPins(): PinRecord[] {
    return checkedRows(this.listPinsStmt.all(), pinFromRow, this.corruptLog, pinRowWhere);
  }

  /** Revokes (or unrevokes) build `buildId` of `diskimage`. */
  setRevocation(diskimage: string, buildId: string, revoked: boolean, reason?: string): void {
    checkBuildOf(diskimage, buildId, `${revoked ? 'revoking' : 'unrevoking'} build ${buildId}`);
    if (revoked) this.revokeStmt.run(diskimage, buildId, this.clock(), reason ?? null);
    else this.unrevokeStmt.run(diskimage, buildId);
    this.changed();
  }

  /**
   * Every revocation, by diskimage then build id. A corrupt one still revokes (its row is the
   * operator's intent), with `since` 0 and a reason saying it is corrupt.
   */
  listRevocations(): RevocationRecord[] {
    return this.listRevocationsStmt.all().map((r) => {
      const { revocation, corrupt } = revocationFromRowLenient(r);
      if (corrupt) this.corruptLog.report(corrupt, JSON.stringify(r));
      return revocation;
    });
  }

  /** Corrupt pins and revocations, by diskimage. */
  corrupt(): CorruptRecord[] {
    return [
      ...corruptRows(this.listPinsStmt.all(), pinFromRow, pinRowWhere),
      ...corruptRows(this.listRevocationsStmt.all(), revocationFromRow, (r) => ({ diskimage: r.diskimage })),
    ];
  }
}
