/**
 * Checks of values a caller gives a store (the CLI may pass operator input) before either
 * backend writes them. Thrown: StoreError naming what was being done.
 */
import { StoreError } from '../errors.js';
import { BUILD_STATES, NODE_STATES, REQUEST_STATES, UPLOAD_STATES } from './models.js';

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
