/**
 * What the store contract's suites share: the start time, a StoreError assertion, and the
 * harness through which split-out suites reach the current test's store and clock.
 */
import assert from 'node:assert/strict';
import { StoreError } from '../../lib/errors.js';
import type { Store } from '../../lib/store/store.js';

export const T0 = 1_700_000_000_000;

/** The current test's store and the clock it reads (set `now` to move time). */
export interface StoreHarness {
  readonly store: Store;
  now: number;
}

/** Asserts that `p` rejects with a StoreError (or subclass) and returns it. */
export async function storeError<E extends StoreError = StoreError>(p: Promise<unknown>, type: new (...a: never[]) => E = StoreError as never): Promise<E> {
  let caught: unknown;
  await assert.rejects(p, (err) => { caught = err; return true; });
  assert.ok(caught instanceof type, `expected ${type.name}, got ${String(caught)}`);
  return caught;
}

export const ids = (records: Array<{ id: string }>): string[] => records.map((r) => r.id);
