/**
 * Checks of values a caller gives a store (the CLI may pass operator input) before either
 * backend writes them. Thrown: StoreError naming what was being done.
 */
import { StoreError } from '../errors.js';
import { LOG_TOKEN_RE } from '../http/build-log-protocol.js';
import { IMAGE_ID_RE } from '../images/image-file.js';
import { BUILD_STATES, NODE_STATES, REQUEST_STATES, ROLLOUT_STATES, UPLOAD_STATES, type UploadPatch } from './models.js';

/** Thrown: StoreError when `state` is not one of the `kind`'s `states` (the CLI may pass operator input). */
export function checkState(kind: string, states: readonly string[], state: string, what: string): void {
  if (!states.includes(state)) {
    throw new StoreError(`${what}: unknown ${kind} state ${JSON.stringify(state)} (expected one of ${states.join(', ')})`);
  }
}

/** Thrown: StoreError when `state` is not a build state (the CLI may pass operator input). */
export function checkBuildState(state: string, what: string): void {
  checkState('build', BUILD_STATES, state, what);
}

/** Thrown: StoreError when `state` is not an upload state. */
export function checkUploadState(state: string, what: string): void {
  checkState('upload', UPLOAD_STATES, state, what);
}

/** Thrown: StoreError when `state` is not a node state. */
export function checkNodeState(state: string, what: string): void {
  checkState('node', NODE_STATES, state, what);
}

/** Thrown: StoreError when `state` is not a node request state. */
export function checkRequestState(state: string, what: string): void {
  checkState('request', REQUEST_STATES, state, what);
}

/** Thrown: StoreError unless `value` is an array of strings. */
export function checkStringList(value: unknown, what: string): void {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new StoreError(`${what}: expected a list of strings, got ${Array.isArray(value) ? 'a list with other values' : typeof value}`);
  }
}

/** Thrown: StoreError unless `buildId` is a build id of `diskimage` (pins and revocations name one). */
export function checkBuildOf(diskimage: string, buildId: string, what: string): void {
  const m = IMAGE_ID_RE.exec(buildId);
  if (!m || m[1] !== diskimage) {
    throw new StoreError(`${what}: ${JSON.stringify(buildId.slice(0, 100))} is not a build id of diskimage ${JSON.stringify(diskimage.slice(0, 100))}`);
  }
}

/** Thrown: StoreError unless `provider` is null (diskimage-wide) or a non-empty name. */
export function checkProviderOrNull(provider: string | null, what: string): void {
  if (provider !== null && (typeof provider !== 'string' || provider === '')) throw new StoreError(`${what}: provider must be null or a non-empty name`);
}

/** Thrown: StoreError unless the rollout fields of an upload patch are what a record may hold. */
export function checkRolloutPatch(patch: UploadPatch, what: string): void {
  for (const k of ['launches', 'launchFailures'] as const) {
    const v = patch[k];
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) throw new StoreError(`${what}: ${k} must be an integer >= 0, got ${String(v)}`);
  }
  const r = patch.rollout;
  if (r === undefined || r === null) return;
  checkState('rollout', ROLLOUT_STATES, r.state, what);
  if (!Number.isFinite(r.time)) throw new StoreError(`${what}: rollout time must be a time (epoch ms)`);
  if (r.reason !== null && typeof r.reason !== 'string') throw new StoreError(`${what}: rollout reason must be a string or null`);
}

/** Thrown: StoreError unless `logUrl` is a string or null (issue 25); answers it. */
export function checkLogUrl(logUrl: unknown, what: string): string | null {
  if (logUrl !== null && typeof logUrl !== 'string') throw new StoreError(`${what}: logUrl must be a string or null, got ${typeof logUrl}`);
  return logUrl;
}

/** Thrown: StoreError unless `logToken` is absent or a log token (issue 31 §9; its value is never quoted); answers it or null. */
export function checkLogToken(logToken: unknown, what: string): string | null {
  if (logToken === undefined) return null;
  if (typeof logToken !== 'string' || !LOG_TOKEN_RE.test(logToken)) throw new StoreError(`${what}: logToken must be 32-128 base64url characters`);
  return logToken;
}

/** Thrown: StoreError unless `diskimage` and `provider` are non-empty names (an upload retry request names both). */
export function checkDiskimageProvider(diskimage: string, provider: string, what: string): void {
  if (typeof diskimage !== 'string' || diskimage === '') throw new StoreError(`${what}: diskimage must be a non-empty name`);
  if (typeof provider !== 'string' || provider === '') throw new StoreError(`${what}: provider must be a non-empty name`);
}
