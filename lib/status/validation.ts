/**
 * Presenters for the checks a new upload passes before it is used: the validation gate
 * (`validating` uploads; failures recorded with a reason beginning `validation: `) and the
 * builder's post-upload-hook (failures beginning `post-upload-hook `). Reasons may be several
 * lines (a console-log or output tail): lists show their first line, JSON and the web the whole.
 * Read from the upload records alone, so they need nothing from the server but the store. Pure.
 */
import type { UploadRecord } from '../store/models.js';
import { ageSeconds, formatAge } from './age.js';

/**
 * How the validation gate's failure reasons begin: a failed check, or the deadline passed
 * (server/launcher/validation-decisions.ts, validation-worker.ts, server/image-lifecycle/validating.ts).
 */
export const VALIDATOR_REASON_PREFIXES = ['validation: ', 'validation timed out: '] as const;

/** How a failed upload's reason begins when a check of the upload (not the transfer) failed it. */
export const VALIDATION_REASON_PREFIXES = [...VALIDATOR_REASON_PREFIXES, 'post-upload-hook '] as const;

/** Whether `reason` is the validation gate's (a failed check or its deadline). */
export function isValidatorFailure(reason: string | null): boolean {
  return reason !== null && VALIDATOR_REASON_PREFIXES.some((p) => reason.startsWith(p));
}

/** Whether `reason` is a failed check of the upload (validation gate or post-upload-hook). */
export function isValidationFailure(reason: string | null): boolean {
  return reason !== null && VALIDATION_REASON_PREFIXES.some((p) => reason.startsWith(p));
}

/** The first non-blank line of a reason, and how many lines follow it (`… (+12 lines)`). */
export function reasonFirstLine(reason: string | null): string {
  if (reason === null) return 'no reason recorded';
  const lines = reason.split(/\r?\n/);
  const first = lines.findIndex((l) => l.trim() !== '');
  if (first < 0) return 'no reason recorded';
  const rest = lines.slice(first + 1).filter((l) => l.trim() !== '').length;
  const head = (lines[first] as string).trimEnd();
  return rest > 0 ? `${head} (+${rest} line${rest === 1 ? '' : 's'})` : head;
}

/** An upload in validation, for JSON. */
export interface ValidatingUpload {
  uploadId: string;
  buildId: string;
  /** Epoch ms it entered `validating`. */
  since: number;
  /** Seconds in validation so far. */
  ageSeconds: number;
}

/** The newest failed check of a target's uploads, for JSON. */
export interface ValidationFailure {
  uploadId: string;
  buildId: string;
  /** Epoch ms it failed. */
  at: number;
  ageSeconds: number;
  /** The whole reason (possibly several lines). */
  reason: string;
}

/** What the records say about one target's checks. */
export interface TargetValidation {
  validating: ValidatingUpload[];
  lastFailure: ValidationFailure | null;
}

/**
 * The uploads of `diskimage` to `provider` now validating (oldest first), and the newest
 * failed upload whose reason is a failed check (while its record is kept: retention drops
 * old failures).
 */
export function targetValidation(uploads: readonly UploadRecord[], diskimage: string, provider: string, now: number): TargetValidation {
  const mine = uploads.filter((u) => u.diskimage === diskimage && u.provider === provider);
  const validating = mine.filter((u) => u.state === 'validating').sort((a, b) => a.stateTime - b.stateTime || cmp(a.id, b.id))
    .map((u) => ({ uploadId: u.id, buildId: u.buildId, since: u.stateTime, ageSeconds: ageSeconds(u.stateTime, now) }));
  const failed = mine.filter((u) => u.state === 'failed' && isValidationFailure(u.reason))
    .sort((a, b) => b.stateTime - a.stateTime || cmp(b.id, a.id))[0];
  return {
    validating,
    lastFailure: failed ? { uploadId: failed.id, buildId: failed.buildId, at: failed.stateTime, ageSeconds: ageSeconds(failed.stateTime, now), reason: failed.reason ?? '' } : null,
  };
}

/**
 * The parts of a target's attention line about its checks: `validating upload 0000000012 of
 * deb-0000000003 for 00:00:02:10` and `last check failed 00:01:00:00 ago (upload 0000000011)`
 * (the failed upload's own line carries the reason).
 */
export function validationAttentionParts(v: TargetValidation): string[] {
  const parts = v.validating.map((u) => `validating upload ${u.uploadId} of ${u.buildId} for ${formatAge(u.ageSeconds * 1000)}`);
  if (v.lastFailure) parts.push(`last validation failed ${formatAge(v.lastFailure.ageSeconds * 1000)} ago (upload ${v.lastFailure.uploadId})`);
  return parts;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
