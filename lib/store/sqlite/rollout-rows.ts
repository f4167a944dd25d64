/**
 * Row ↔ record mapping of the SQLite store's rollout intents (issue 24): the `pins` and
 * `revocations` tables (an upload's launch counts and rollout decision are in image-rows.ts).
 */
import { CorruptRecordError } from '../../errors.js';
import { corruptOf, type CorruptRecord } from '../corrupt.js';
import type { PinRecord, RevocationRecord } from '../models.js';
import { Columns } from './columns.js';
import { WHOLE_DISKIMAGE } from './image-rows.js';

/** A row of `pins`; `provider` is '' for a diskimage-wide pin (as pauses). */
export interface PinRow {
  diskimage: string;
  provider: string;
  build_id: string;
  since: number;
  reason: string | null;
}

/** A row of `revocations`. */
export interface RevocationRow {
  diskimage: string;
  build_id: string;
  since: number;
  reason: string | null;
}

/** The id a pin is listed under: `<diskimage>` or `<diskimage>/<provider>`. */
const pinRowId = (r: PinRow): string => (r.provider === WHOLE_DISKIMAGE ? r.diskimage : `${r.diskimage}/${r.provider}`);

/** A reason column: a string or NULL. */
function reasonCol(c: Columns, r: { reason: unknown }): string | null {
  if (r.reason !== null && typeof r.reason !== 'string') c.fail(`reason is ${typeof r.reason}, expected a string`);
  return r.reason;
}

/** Maps a `pins` row to a fresh record. Thrown: CorruptRecordError. */
export function pinFromRow(r: PinRow): PinRecord {
  const c = new Columns(r, 'pin', pinRowId(r));
  if (typeof r.build_id !== 'string') c.fail(`build_id is ${typeof r.build_id}, expected a build id`);
  return {
    diskimage: r.diskimage,
    provider: r.provider === WHOLE_DISKIMAGE ? null : r.provider,
    buildId: r.build_id,
    since: c.time('since'),
    reason: reasonCol(c, r),
  };
}

/** Where a pin row lives, for its corrupt description. */
export const pinRowWhere = (r: PinRow): { diskimage: string; provider: string | null } =>
  ({ diskimage: r.diskimage, provider: r.provider === WHOLE_DISKIMAGE ? null : r.provider });

/** Maps a `revocations` row to a fresh record. Thrown: CorruptRecordError. */
export function revocationFromRow(r: RevocationRow): RevocationRecord {
  const c = new Columns(r, 'revocation', r.build_id);
  return { diskimage: r.diskimage, buildId: r.build_id, since: c.time('since'), reason: reasonCol(c, r) };
}

/**
 * A revocation row as a revocation even when corrupt (the row is the operator's intent): then
 * `since` is 0 and the reason says it is corrupt, and `corrupt` describes it.
 */
export function revocationFromRowLenient(r: RevocationRow): { revocation: RevocationRecord; corrupt?: CorruptRecord } {
  try {
    return { revocation: revocationFromRow(r) };
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    const corrupt = corruptOf(err, { diskimage: r.diskimage });
    return { revocation: { diskimage: r.diskimage, buildId: r.build_id, since: 0, reason: `corrupt revocation record (${corrupt.reason})` }, corrupt };
  }
}
