/**
 * What the store contract's suites share: the start time, a StoreError assertion, and the
 * harness through which split-out suites reach the current test's store and clock.
 */
import assert from 'node:assert/strict';
import { StoreError } from '../../lib/errors.js';
import type { Store } from '../../lib/store/store.js';
import type { Nodepool11Record } from '../support/nodepool11-model.js';

export const T0 = 1_700_000_000_000;

/** The current test's store and the clock it reads (set `now` to move time). */
export interface StoreHarness {
  readonly store: Store;
  now: number;
  /**
   * Makes a session lapse. A lease backend (SQLite) moves the clock past the session's TTL
   * (other sessions lapse with it unless renewed); a backend whose server expires sessions
   * (ZooKeeper) has it expired there for real.
   */
  lapse(sessionId: string): Promise<void>;
  /**
   * True when a lapsed session is gone at once with everything ephemeral of it (ZooKeeper);
   * false when it stays until reaped and reapSessions counts what it removes (SQLite).
   */
  readonly lapsedSessionsVanish: boolean;
  /** A second handle on the current test's store (as another process opens it); closed after the test. */
  openAnother(): Promise<Store>;
  /**
   * The current store's records as Nodepool 11 reads them from its tree
   * (test/support/nodepool11-model.ts); undefined for a backend Nodepool does not read (SQLite).
   */
  nodepool11Records(): Promise<Nodepool11Record[]> | undefined;
}

/**
 * The default {@link StoreHarness.lapse}: moves the clock to one ms past the session's TTL
 * (from its last renewal), never backwards.
 */
export async function lapseByClock(h: Pick<StoreHarness, 'store' | 'now'>, sessionId: string): Promise<void> {
  const s = await h.store.getSession(sessionId);
  if (!s) throw new Error(`session ${sessionId} is unknown`);
  h.now = Math.max(h.now, s.renewed + s.ttlMs + 1);
}

/** Asserts that `p` rejects with a StoreError (or subclass) and returns it. */
export async function storeError<E extends StoreError = StoreError>(p: Promise<unknown>, type: new (...a: never[]) => E = StoreError as never): Promise<E> {
  let caught: unknown;
  await assert.rejects(p, (err) => { caught = err; return true; });
  assert.ok(caught instanceof type, `expected ${type.name}, got ${String(caught)}`);
  return caught;
}

export const ids = (records: Array<{ id: string }>): string[] => records.map((r) => r.id);
