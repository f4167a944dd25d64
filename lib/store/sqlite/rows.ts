/**
 * Row ↔ record mapping for the SQLite store: snake_case columns, JSON kept as TEXT. Every
 * mapping builds a fresh object, so no record handed out shares state with another.
 */
import { StoreError } from '../../errors.js';
import {
  BUILD_STATES, UPLOAD_STATES,
  type BuildRecord, type BuildState, type ImageFileInfo, type JobProgress, type PauseRecord,
  type UploadRecord, type UploadState,
} from '../models.js';

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

/** Parses a JSON column; a column that does not parse is a StoreError naming the record. */
export function fromJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new StoreError(`${what} holds invalid JSON`, { cause });
  }
}

/** Serialises a value for a JSON column. Thrown: StoreError when it has no JSON form. */
export function toJson(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new StoreError(`${what} cannot be stored as JSON`, { cause });
  }
  if (text === undefined) throw new StoreError(`${what} cannot be stored as JSON (got ${typeof value})`);
  return text;
}

/** JSON for a nullable column: null stays SQL NULL. */
export function toJsonOrNull(value: unknown, what: string): string | null {
  return value === null ? null : toJson(value, what);
}

/** Maps a `builds` row to a fresh record. */
export function buildFromRow(r: BuildRow): BuildRecord {
  const what = `build ${r.id}`;
  return {
    id: r.id,
    diskimage: r.diskimage,
    state: r.state as BuildState,
    stateTime: r.state_time,
    created: r.created,
    builderHostname: r.builder_hostname,
    builderId: r.builder_id,
    formats: fromJson<string[]>(r.formats, `${what} formats`),
    files: fromJson<ImageFileInfo[]>(r.files, `${what} files`),
    reason: r.reason,
    progress: r.progress === null ? null : fromJson<JobProgress>(r.progress, `${what} progress`),
  };
}

/** Maps an `uploads` row to a fresh record. */
export function uploadFromRow(r: UploadRow): UploadRecord {
  return {
    id: r.id,
    buildId: r.build_id,
    diskimage: r.diskimage,
    provider: r.provider,
    imageName: r.image_name,
    state: r.state as UploadState,
    stateTime: r.state_time,
    created: r.created,
    externalId: r.external_id,
    externalName: r.external_name,
    format: r.format,
    reason: r.reason,
    progress: r.progress === null ? null : fromJson<JobProgress>(r.progress, `upload ${r.id} progress`),
  };
}

/** Maps a `pauses` row to a fresh record. */
export function pauseFromRow(r: PauseRow): PauseRecord {
  return {
    diskimage: r.diskimage,
    provider: r.provider === WHOLE_DISKIMAGE ? null : r.provider,
    since: r.since,
    reason: r.reason,
  };
}

/** Thrown: StoreError when `state` is not a build state (the CLI may pass operator input). */
export function checkBuildState(state: string, what: string): void {
  if (!(BUILD_STATES as readonly string[]).includes(state)) {
    throw new StoreError(`${what}: unknown build state ${JSON.stringify(state)} (expected one of ${BUILD_STATES.join(', ')})`);
  }
}

/** Thrown: StoreError when `state` is not an upload state. */
export function checkUploadState(state: string, what: string): void {
  if (!(UPLOAD_STATES as readonly string[]).includes(state)) {
    throw new StoreError(`${what}: unknown upload state ${JSON.stringify(state)} (expected one of ${UPLOAD_STATES.join(', ')})`);
  }
}

/** `(?, ?, ?)` for an IN list of `n` values (n ≥ 1). */
export function placeholders(n: number): string {
  return `(${Array.from({ length: n }, () => '?').join(', ')})`;
}
