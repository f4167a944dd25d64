/**
 * Row ↔ record mapping of the SQLite store's image tables (`builds`, `uploads`, `pauses`; pins
 * and revocations are in rollout-rows.ts):
 * snake_case columns, JSON kept as TEXT. Every mapping builds a fresh object, so no record
 * handed out shares state with another.
 */
import { CorruptRecordError } from '../../errors.js';
import { corruptOf, type CorruptRecord } from '../corrupt.js';
import { IMAGE_FIELD_KEYS, imageFieldsOf, type ImageFields } from '../image-fields.js';
import {
  BUILD_STATES, ROLLOUT_STATES, UPLOAD_STATES,
  type BuildRecord, type BuildState, type ImageFileInfo, type JobProgress, type PauseRecord,
  type UploadProgress, type UploadRecord, type UploadState,
} from '../models.js';
import { toJson } from '../to-json.js';
import { Columns, progressCol } from './columns.js';

/** A row of `builds`. */
export interface BuildRow {
  id: string;
  diskimage: string;
  state: string;
  state_time: number;
  created: number;
  builder_hostname: string | null;
  builder_id: string | null;
  formats: string;
  files: string;
  reason: string | null;
  progress: string | null;
  image_fields: string | null;
  /** Issue 25 (schema 9): the builder's URL of the build's log; NULL: none. */
  log_url: string | null;
}

/** A row of `uploads`. */
export interface UploadRow {
  id: string;
  build_id: string;
  diskimage: string;
  provider: string;
  image_name: string;
  state: string;
  state_time: number;
  created: number;
  external_id: string | null;
  external_name: string | null;
  format: string | null;
  reason: string | null;
  progress: string | null;
  image_fields: string | null;
  launches: number;
  launch_failures: number;
  rollout_state: string | null;
  rollout_time: number | null;
  rollout_reason: string | null;
}

/** A row of `pauses`; `provider` is '' for a diskimage-wide pause (NULL is not unique in a key). */
export interface PauseRow {
  diskimage: string;
  provider: string;
  since: number;
  reason: string | null;
}

/** The `provider` column value of a diskimage-wide pause. */
export const WHOLE_DISKIMAGE = '';

/** Maps a `builds` row to a fresh record. Thrown: CorruptRecordError. */
export function buildFromRow(r: BuildRow): BuildRecord {
  const c = new Columns(r, 'build', r.id);
  return {
    id: r.id,
    diskimage: r.diskimage,
    state: c.state(BUILD_STATES) as BuildState,
    stateTime: c.time('state_time'),
    created: c.time('created'),
    builderHostname: r.builder_hostname,
    builderId: r.builder_id,
    formats: c.strList('formats'),
    files: c.json('files', (f, k) => {
      const files = f.objectList(k);
      for (const file of files) {
        if (typeof file.format !== 'string' || typeof file.size !== 'number' || typeof file.sha256 !== 'string') f.fail('files holds an entry without format, size and sha256');
      }
      return files as unknown as ImageFileInfo[];
    }),
    reason: r.reason,
    progress: progressCol<JobProgress>(c, 'progress'),
    ...imageFieldsCol(c, r.image_fields),
    ...logUrlCol(c, r.log_url),
  };
}

/** The `log_url` column as the record holds it: `logUrl` when there is one (absent when NULL). */
function logUrlCol(c: Columns, v: unknown): Pick<BuildRecord, 'logUrl'> {
  if (v === null || v === undefined) return {};
  if (typeof v !== 'string') c.fail(`log_url is ${typeof v}, expected a string`);
  return { logUrl: v };
}

/** The `image_fields` column of a build or upload: the fields it holds (each a string or null). */
function imageFieldsCol(c: Columns, text: string | null): ImageFields {
  if (text === null) return {};
  return c.json('image_fields', (f, k) => {
    const o = f.optObject(k) ?? {};
    const out: ImageFields = {};
    for (const key of IMAGE_FIELD_KEYS) {
      if (!(key in o)) continue;
      const v = o[key];
      if (typeof v !== 'string' && v !== null) f.fail(`image_fields.${key} is not a string or null`);
      out[key] = v as string | null;
    }
    return out;
  });
}

/** The `image_fields` value of a record or new record: NULL when it has none of them. */
export function imageFieldsValue(r: ImageFields, what: string): string | null {
  const out = imageFieldsOf(r);
  return Object.keys(out).length === 0 ? null : toJson(out, `${what} image fields`);
}

/** Maps an `uploads` row to a fresh record. Thrown: CorruptRecordError. */
export function uploadFromRow(r: UploadRow): UploadRecord {
  const c = new Columns(r, 'upload', r.id);
  return {
    id: r.id,
    buildId: r.build_id,
    diskimage: r.diskimage,
    provider: r.provider,
    imageName: r.image_name,
    state: c.state(UPLOAD_STATES) as UploadState,
    stateTime: c.time('state_time'),
    created: c.time('created'),
    externalId: r.external_id,
    externalName: r.external_name,
    format: r.format,
    reason: r.reason,
    progress: progressCol<UploadProgress>(c, 'progress'),
    ...imageFieldsCol(c, r.image_fields),
    ...uploadRolloutCols(c, r),
  };
}

/**
 * The rollout fields of an upload row (issue 24) as the record holds them: `launches` and
 * `launchFailures` when not 0, `rollout` when a decision was written (absent reads as 0 and none).
 */
function uploadRolloutCols(c: Columns, r: UploadRow): Pick<UploadRecord, 'launches' | 'launchFailures' | 'rollout'> {
  const out: Pick<UploadRecord, 'launches' | 'launchFailures' | 'rollout'> = {};
  for (const [col, key] of [['launches', 'launches'], ['launch_failures', 'launchFailures']] as const) {
    const v: unknown = r[col];
    if (!(Number.isSafeInteger(v) && (v as number) >= 0)) c.fail(`${col} is ${typeof v}, expected a count`);
    if (v !== 0) out[key] = v as number;
  }
  if (r.rollout_state !== null) {
    const state = ROLLOUT_STATES.find((s) => s === r.rollout_state);
    if (state === undefined) c.fail(`unknown rollout_state ${JSON.stringify(String(r.rollout_state).slice(0, 40))} (expected one of ${ROLLOUT_STATES.join(', ')})`);
    if (r.rollout_reason !== null && typeof r.rollout_reason !== 'string') c.fail(`rollout_reason is ${typeof r.rollout_reason}, expected a string`);
    out.rollout = { state, time: c.time('rollout_time'), reason: r.rollout_reason };
  }
  return out;
}

/** The id a pause is listed under: `<diskimage>` or `<diskimage>/<provider>`. */
export const pauseRowId = (r: PauseRow): string => (r.provider === WHOLE_DISKIMAGE ? r.diskimage : `${r.diskimage}/${r.provider}`);

/** Maps a `pauses` row to a fresh record. Thrown: CorruptRecordError. */
export function pauseFromRow(r: PauseRow): PauseRecord {
  const c = new Columns(r, 'pause', pauseRowId(r));
  return {
    diskimage: r.diskimage,
    provider: r.provider === WHOLE_DISKIMAGE ? null : r.provider,
    since: c.time('since'),
    reason: r.reason,
  };
}

/**
 * A pause row as a pause even when corrupt (the row is the operator's intent): then `since` is
 * 0 and the reason says it is corrupt, and `corrupt` describes it.
 */
export function pauseFromRowLenient(r: PauseRow): { pause: PauseRecord; corrupt?: CorruptRecord } {
  try {
    return { pause: pauseFromRow(r) };
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    const provider = r.provider === WHOLE_DISKIMAGE ? null : r.provider;
    const corrupt = corruptOf(err, { diskimage: r.diskimage, provider });
    return { pause: { diskimage: r.diskimage, provider, since: 0, reason: `corrupt pause record (${corrupt.reason})` }, corrupt };
  }
}
