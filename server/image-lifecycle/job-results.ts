/**
 * Reading what builders answer (pure, apart from the process's known secrets): WORK_COMPLETE payloads of builds and uploads, the
 * reason of a WORK_FAIL or WORK_EXCEPTION, the builder identity sent as WORK_DATA, and the
 * Gearman unique of each job.
 */
import { createHash } from 'node:crypto';
import { BadPayloadError } from '../../lib/errors.js';
import type { JobResult } from '../../lib/gearman/types.js';
import { MAX_UNIQUE_BYTES } from '../../lib/gearman/types.js';
import { processSecrets, type SecretRegistry } from '../../lib/redact.js';
import type { ImageFileInfo } from '../../lib/store/models.js';

/** What a finished build reports. */
export interface BuildOutcome {
  builderHostname: string;
  builderId: string;
  formats: string[];
  files: ImageFileInfo[];
}

/** What a finished upload reports. */
export interface UploadOutcome {
  externalId: string;
  externalName: string;
  format: string;
}

function object(data: Buffer, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(data.toString('utf8'));
  } catch {
    throw new BadPayloadError(`${what}: not JSON: ${JSON.stringify(data.toString('utf8').slice(0, 200))}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new BadPayloadError(`${what}: expected a JSON object`);
  return v as Record<string, unknown>;
}

function str(o: Record<string, unknown>, key: string, what: string): string {
  const v = o[key];
  if (typeof v !== 'string' || v === '') throw new BadPayloadError(`${what}: "${key}" must be a non-empty string`);
  return v;
}

/** Parses a build's WORK_COMPLETE; it must name the build that was asked for. */
export function parseBuildComplete(data: Buffer, buildId: string): BuildOutcome {
  const what = `WORK_COMPLETE of build ${buildId}`;
  const o = object(data, what);
  if (o['image-id'] !== buildId) throw new BadPayloadError(`${what}: it reports image-id ${JSON.stringify(o['image-id'])}`);
  const formats = o.formats;
  if (!Array.isArray(formats) || !formats.every((f) => typeof f === 'string')) throw new BadPayloadError(`${what}: "formats" must be a list of strings`);
  return { builderHostname: str(o, 'builder', what), builderId: str(o, 'builder-id', what), formats: formats as string[], files: filesOf(o, what) };
}

/** The optional `files` list of a payload. */
function filesOf(o: Record<string, unknown>, what: string): ImageFileInfo[] {
  const files: ImageFileInfo[] = [];
  if (o.files === undefined) return files;
  if (!Array.isArray(o.files)) throw new BadPayloadError(`${what}: "files" must be a list`);
  for (const f of o.files as unknown[]) {
    const r = f as Record<string, unknown>;
    if (typeof r?.format !== 'string' || typeof r.size !== 'number' || typeof r.sha256 !== 'string') throw new BadPayloadError(`${what}: each file needs format, size and sha256`);
    files.push({ format: r.format, size: r.size, sha256: r.sha256 });
  }
  return files;
}

/** What a builder reports after deleting some formats of a build (`image-delete:<id>` with `formats`). */
export interface FormatsDeleted {
  /** Formats whose files it deleted (or found gone). */
  deleted: string[];
  /** The build's files it still holds. */
  files: ImageFileInfo[];
  /** Bytes of the files it removed (images and checksums). */
  freedBytes: number;
}

/**
 * Parses the WORK_COMPLETE of a partial delete; undefined when it is a whole delete's answer
 * (`{}`: a builder that ignored `formats` and deleted the build).
 */
export function parseFormatsDeleted(data: Buffer, buildId: string): FormatsDeleted | undefined {
  const what = `WORK_COMPLETE of the partial delete of ${buildId}`;
  const o = object(data.length ? data : Buffer.from('{}'), what);
  if (o['deleted-formats'] === undefined) return undefined;
  const deleted = o['deleted-formats'];
  if (!Array.isArray(deleted) || !deleted.every((f) => typeof f === 'string')) throw new BadPayloadError(`${what}: "deleted-formats" must be a list of strings`);
  const freed = o['freed-bytes'];
  if (typeof freed !== 'number' || !(freed >= 0)) throw new BadPayloadError(`${what}: "freed-bytes" must be a number`);
  return { deleted: deleted as string[], files: filesOf(o, what), freedBytes: freed };
}

/** Parses an upload's WORK_COMPLETE. */
export function parseUploadComplete(data: Buffer, what: string): UploadOutcome {
  const o = object(data, what);
  return { externalId: str(o, 'external-id', what), externalName: str(o, 'external-name', what), format: str(o, 'format', what) };
}

/** Who runs a build, as its WORK_DATA says when it starts. */
export interface BuilderIdentity {
  hostname: string;
  builderId: string;
  /**
   * Where that builder serves the build's log (`log-url`, issue 25 §2): null when it serves
   * none, or when the URL is not http(s) (a builder older than log URLs sends no key: null too).
   */
  logUrl: string | null;
}

/** The builder identity a build job sends as WORK_DATA when it starts; undefined for other data. */
export function parseBuilderIdentity(data: Buffer): BuilderIdentity | undefined {
  try {
    const o = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    if (typeof o.builder === 'string' && typeof o['builder-id'] === 'string') return { hostname: o.builder, builderId: o['builder-id'], logUrl: httpUrl(o['log-url']) };
  } catch {
    // Not ours: builders may send other data.
  }
  return undefined;
}

/** `v` when it is an http(s) URL of at most 2048 characters, else null. */
function httpUrl(v: unknown): string | null {
  if (typeof v !== 'string' || v.length > 2048) return null;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:' ? v : null;
  } catch {
    return null;
  }
}

/**
 * A builder's note that an upload attempt failed and another follows (`{"upload-attempt",
 * "attempts", "last-error"}`), as the reason to show on the uploading record; undefined for
 * other data.
 */
export function parseUploadAttempt(data: Buffer, secrets: SecretRegistry = processSecrets): string | undefined {
  try {
    const o = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    const n = o['upload-attempt'];
    const of = o.attempts;
    const error = o['last-error'];
    if (typeof n === 'number' && typeof of === 'number' && typeof error === 'string') {
      // Scrubbed before the cut, so the cut never leaves part of a secret.
      return `attempt ${n} of ${of}, after: ${secrets.scrub(error).slice(0, 500)}`;
    }
  } catch {
    // Not ours.
  }
  return undefined;
}

/**
 * The reason to record for a job that did not complete, with every secret this process knows
 * (its config's, its clouds.yaml's) replaced: a builder that did not know one yet, or runs
 * another version, must not put it into a record that lists and web pages show.
 */
export function failureReason(result: Exclude<JobResult, { type: 'complete' }>, secrets: SecretRegistry = processSecrets): string {
  const warnings = result.warnings.map((w) => w.toString('utf8').trim()).filter(Boolean);
  if (result.type === 'exception') {
    const first = result.data.toString('utf8').trim().split('\n')[0] ?? '';
    return secrets.scrub(`builder exception: ${first || warnings.join('; ') || 'no message'}`);
  }
  // gearmand itself sends a bare WORK_FAIL when the builder running the job disconnected
  // and --job-retries is used up.
  return secrets.scrub(warnings.join('; ')) || 'the job failed without a message (the builder running it may have died)';
}

/** A Gearman unique for a key: the key itself, or a digest of it when gearmand would truncate it. */
export function jobUnique(key: string): string {
  if (Buffer.byteLength(key, 'utf8') <= MAX_UNIQUE_BYTES) return key;
  return `sha1:${createHash('sha1').update(key).digest('hex')}`;
}
