import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { failureRun, retryDelayMs } from '../../../../server/image-lifecycle/backoff.js';

const cfg = { retryDelay: 60, maxRetryDelay: 3600 };

describe('retryDelayMs', () => {
  const rows: Array<[string, number, number]> = [
    ['no delay without failures', 0, 0],
    ['retry-delay after the first failure', 1, 60_000],
    ['doubles per consecutive failure', 3, 240_000],
    ['capped at max-retry-delay', 7, 3_600_000],
    ['stays capped however many failures', 1000, 3_600_000],
  ];
  for (const [name, failures, ms] of rows) it(name, () => assert.equal(retryDelayMs(failures, cfg), ms));
});

describe('failureRun', () => {
  it('counts failures newest first, skipping others, up to a stop record', () => {
    const r = (state: string, stateTime: number) => ({ state, stateTime });
    assert.deepEqual(failureRun([r('building', 9), r('failed', 8), r('deleting', 7), r('failed', 6), r('lost', 5), r('failed', 4)], cfg, (x) => x.state === 'lost'),
      { failures: 2, newestFailed: 8, retryAt: 8 + 120_000 });
    assert.deepEqual(failureRun([], cfg), { failures: 0, newestFailed: null, retryAt: null });
  });
});
