/**
 * Image records ↔ znode JSON (builds, uploads, pauses; the rollout fields and records are in
 * rollout-records.ts), with Nodepool's field names (`state`,
 * `state_time` in float seconds, `builder`, `builder_id`, `formats` comma-joined,
 * `external_id`, `external_name`, …); lib/store/zookeeper/records.ts says the rules.
 *
 * `state` only ever holds a state Nodepool 11 knows (issue 31: its ImageBuild and ImageUpload
 * raise TypeError on any other, in every reader): a build `lost` is written `ready`, an upload
 * `validating` is written `uploading`, each with ours beside it in `lifecycle_state`.
 */
import { Fields } from '../corrupt.js';
import { IMAGE_FIELD_KEYS, imageFieldsOf as imageFieldsOfRecord, type ImageFields } from '../image-fields.js';
import {
  BUILD_STATES, NODEPOOL_BUILD_STATE, NODEPOOL_UPLOAD_STATE, UPLOAD_STATES,
  type BuildRecord, type ImageFileInfo, type JobProgress, type PauseRecord, type UploadProgress, type UploadRecord,
} from '../models.js';
import { clone, createdOf, progressOf, toSeconds, type Json } from './records.js';
import { uploadRolloutJson, uploadRolloutOf } from './rollout-records.js';

/**
 * Our field beside Nodepool's `state` (issue 31): the state of ours when Nodepool 11 has no word
 * for it (`lost`, `validating`); absent otherwise.
 */
export const LIFECYCLE_STATE = 'lifecycle_state';

/** `state` as Nodepool 11 reads it, and ours in {@link LIFECYCLE_STATE} when that differs. */
function stateJson<S extends string>(state: S, nodepool: Readonly<Record<S, string>>): Json {
  const told = nodepool[state];
  return told === state ? { state } : { state: told, [LIFECYCLE_STATE]: state };
}

/**
 * A record's state: `lifecycle_state` when it is one of ours that Nodepool 11 reads as the
 * record's `state`, else `state` (Nodepool's records, and ours written before issue 31, which
 * held `lost` or `validating` in `state` itself). When `state` says something else, another
 * writer (Nodepool, an operator) moved the record on after us, and `state` wins. Thrown:
 * CorruptRecordError when either holds no state of ours.
 */
function stateOf<S extends string>(f: Fields, j: Json, states: readonly S[], nodepool: Readonly<Record<S, string>>): S {
  const state = f.state('state', states);
  if (j[LIFECYCLE_STATE] === undefined || j[LIFECYCLE_STATE] === null) return state;
  const ours = f.state(LIFECYCLE_STATE, states);
  return nodepool[ours] === state ? ours : state;
}

/**
 * Whether a record's raw `state` holds a state of ours that Nodepool 11 has no word for (as
 * this program wrote `lost` and `validating` before issue 31): it is rewritten Nodepool's way.
 */
export function holdsOwnState(data: Buffer | undefined, nodepool: Readonly<Record<string, string>>): boolean {
  if (!data || data.length === 0) return false;
  try {
    const state = (JSON.parse(data.toString('utf8')) as Json).state;
    return typeof state === 'string' && Object.hasOwn(nodepool, state) && nodepool[state] !== state;
  } catch {
    return false;
  }
}

/** A build's JSON. */
export function buildJson(b: BuildRecord): Json {
  const j: Json = { ...stateJson(b.state, NODEPOOL_BUILD_STATE), state_time: toSeconds(b.stateTime) };
  if (b.builderHostname !== null) j.builder = b.builderHostname;
  if (b.builderId !== null) j.builder_id = b.builderId;
  if (b.formats.length > 0) j.formats = b.formats.join(',');
  j.created_time = toSeconds(b.created);
  j.files = b.files;
  j.reason = b.reason;
  j.progress = b.progress;
  imageFieldsJson(j, b);
  // Issue 25: ours, beside Nodepool's fields (Nodepool 11 ignores it); absent when there is none.
  if (typeof b.logUrl === 'string') j.log_url = b.logUrl;
  return j;
}

/** Nodepool 11's JSON names of the image fields. */
const IMAGE_FIELD_JSON: Record<(typeof IMAGE_FIELD_KEYS)[number], string> = { username: 'username', pythonPath: 'python_path', shellType: 'shell_type' };

/** Nodepool 11's `username`, `python_path`, `shell_type`: written when the record has them. */
function imageFieldsJson(j: Json, r: ImageFields): void {
  for (const [k, v] of Object.entries(imageFieldsOfRecord(r))) j[IMAGE_FIELD_JSON[k as keyof ImageFields]] = v;
}

/** The same fields of a build or upload JSON, as it says them (absent when it does not; no legacy defaults). */
function imageFieldsOf(f: Fields, j: Json): ImageFields {
  const out: ImageFields = {};
  for (const k of IMAGE_FIELD_KEYS) if (IMAGE_FIELD_JSON[k] in j) out[k] = f.optStr(IMAGE_FIELD_JSON[k]);
  return out;
}

/** The image fields of a build's JSON that hold a string or null (lenient: others are left out). */
export function imageFieldsFromJson(j: Json): ImageFields {
  const out: ImageFields = {};
  for (const k of IMAGE_FIELD_KEYS) {
    const v = j[IMAGE_FIELD_JSON[k]];
    if (typeof v === 'string' || v === null) out[k] = v;
  }
  return out;
}

/** Thrown: CorruptRecordError when the JSON is not a build's. */
export function buildFromJson(id: string, diskimage: string, j: Json): BuildRecord {
  const f: Fields = new Fields(j, 'build', id);
  const state = stateOf(f, j, BUILD_STATES, NODEPOOL_BUILD_STATE);
  const stateTime = f.seconds('state_time');
  const formats = f.optStr('formats');
  const files = f.objectList('files');
  for (const file of files) {
    if (typeof file.format !== 'string' || typeof file.size !== 'number' || typeof file.sha256 !== 'string') f.fail('files holds an entry without format, size and sha256');
  }
  return {
    id,
    diskimage,
    state,
    stateTime,
    created: createdOf(f, stateTime),
    builderHostname: f.optStr('builder'),
    builderId: f.optStr('builder_id'),
    formats: formats !== null && formats !== '' ? formats.split(',') : [],
    files: clone(files as unknown as ImageFileInfo[]),
    reason: f.optStr('reason'),
    progress: progressOf<JobProgress>(f),
    ...imageFieldsOf(f, j),
    ...logUrlOf(f),
  };
}

/** A build's `log_url` (issue 25) as the record holds it: `logUrl` when there is one. */
function logUrlOf(f: Fields): Pick<BuildRecord, 'logUrl'> {
  const v = f.optStr('log_url');
  return v === null ? {} : { logUrl: v };
}

/** An upload's JSON. */
export function uploadJson(u: UploadRecord): Json {
  const j: Json = {
    ...stateJson(u.state, NODEPOOL_UPLOAD_STATE),
    state_time: toSeconds(u.stateTime),
    external_id: u.externalId,
    external_name: u.externalName,
    format: u.format,
    image_name: u.imageName,
    created_time: toSeconds(u.created),
    reason: u.reason,
    progress: u.progress,
    ...uploadRolloutJson(u),
  };
  imageFieldsJson(j, u);
  return j;
}

/** Thrown: CorruptRecordError when the JSON is not an upload's. */
export function uploadFromJson(where: { id: string; buildId: string; diskimage: string; provider: string }, j: Json): UploadRecord {
  const f: Fields = new Fields(j, 'upload', where.id);
  const state = stateOf(f, j, UPLOAD_STATES, NODEPOOL_UPLOAD_STATE);
  const stateTime = f.seconds('state_time');
  return {
    id: where.id,
    buildId: where.buildId,
    diskimage: where.diskimage,
    provider: where.provider,
    imageName: f.optStr('image_name') ?? where.diskimage,
    state,
    stateTime,
    created: createdOf(f, stateTime),
    externalId: f.optStr('external_id'),
    externalName: f.optStr('external_name'),
    format: f.optStr('format'),
    reason: f.optStr('reason'),
    progress: progressOf<UploadProgress>(f),
    ...imageFieldsOf(f, j),
    ...uploadRolloutOf(f),
  };
}

/** A pause's JSON. */
export function pauseJson(p: Omit<PauseRecord, 'diskimage' | 'provider'>): Json {
  return { since: toSeconds(p.since), reason: p.reason };
}

/** The id a pause is listed under: `<diskimage>` or `<diskimage>/<provider>`. */
export const pauseId = (diskimage: string, provider: string | null): string => (provider === null ? diskimage : `${diskimage}/${provider}`);

/** Thrown: CorruptRecordError when the JSON is not a pause's. */
export function pauseFromJson(diskimage: string, provider: string | null, j: Json, ctimeMs: number): PauseRecord {
  const f: Fields = new Fields(j, 'pause', pauseId(diskimage, provider));
  return { diskimage, provider, since: f.optSeconds('since') ?? ctimeMs, reason: f.optStr('reason') };
}

/** Fresh copies of cached records (cheaper than structuredClone, which a 4,000-upload pass feels). */
export const copyBuild = (b: BuildRecord): BuildRecord => ({
  ...b, formats: [...b.formats], files: b.files.map((f) => ({ ...f })), progress: b.progress ? { ...b.progress } : null,
});

export const copyUpload = (u: UploadRecord): UploadRecord => {
  const c = { ...u, progress: u.progress ? { ...u.progress } : null };
  if (u.rollout) c.rollout = { ...u.rollout };
  return c;
};
