/**
 * Image records ↔ znode JSON (builds, uploads, pauses; the rollout fields and records are in
 * rollout-records.ts), with Nodepool's field names (`state`,
 * `state_time` in float seconds, `builder`, `builder_id`, `formats` comma-joined,
 * `external_id`, `external_name`, …); lib/store/zookeeper/records.ts says the rules.
 */
import { Fields } from '../corrupt.js';
import { IMAGE_FIELD_KEYS, imageFieldsOf as imageFieldsOfRecord, type ImageFields } from '../image-fields.js';
import {
  BUILD_STATES, UPLOAD_STATES,
  type BuildRecord, type ImageFileInfo, type JobProgress, type PauseRecord, type UploadProgress, type UploadRecord,
} from '../models.js';
import { clone, createdOf, progressOf, toSeconds, type Json } from './records.js';
import { uploadRolloutJson, uploadRolloutOf } from './rollout-records.js';

/** A build's JSON. */
export function buildJson(b: BuildRecord): Json {
  const j: Json = { state: b.state, state_time: toSeconds(b.stateTime) };
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
  const state = f.state('state', BUILD_STATES);
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
    state: u.state,
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
  const state = f.state('state', UPLOAD_STATES);
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
