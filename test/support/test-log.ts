/**
 * Test support: the logger tests pass to components (silent unless NODEPOOL_TEST_LOG names a
 * level, e.g. `NODEPOOL_TEST_LOG=debug`), and a deferred promise for ordering tests.
 */
import { createRootLogger, silentLogger, type Logger } from '../../lib/log.js';

export function testLogger(): Logger {
  const level = process.env.NODEPOOL_TEST_LOG ?? process.env.TEST_LOG;
  return level ? createRootLogger({ level, format: 'pretty' }) : silentLogger();
}

/** A promise with its resolve function outside. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => { resolve = r; });
  return { promise, resolve };
}
