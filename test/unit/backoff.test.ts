import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff, backoffMs, type BackoffPolicy } from '../../lib/backoff.js';

/** The policies of the tree's retry loops, with the delays their formulas gave before lib/backoff.ts. */
const rows: Array<[string, BackoffPolicy, number[]]> = [
  ['image lifecycle: retry-delay 60 s doubling to max-retry-delay 3600 s', { initialMs: 60_000, maxMs: 3_600_000 },
    [60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000]],
  ['upload attempts: 5 s doubling, no cap', { initialMs: 5000 }, [5000, 10_000, 20_000, 40_000]],
  ['Nova status polls: 250 ms doubling to 2 s', { initialMs: 250, maxMs: 2000 }, [250, 500, 1000, 2000, 2000]],
  ['ZooKeeper cache reads: 50 ms doubling to 2 s', { initialMs: 50, maxMs: 2000 }, [50, 100, 200, 400, 800, 1600, 2000]],
  ['ZooKeeper session rebind: 100 ms doubling to 5 s', { initialMs: 100, maxMs: 5000 }, [100, 200, 400, 800, 1600, 3200, 5000]],
  ['another factor', { initialMs: 100, factor: 3, maxMs: 1000 }, [100, 300, 900, 1000]],
];

describe('backoffMs', () => {
  for (const [name, policy, delays] of rows) {
    it(name, () => assert.deepEqual(delays.map((_, n) => backoffMs(n, policy)), delays));
  }

  it('takes up to the jitter share off at random, rounded to whole ms', () => {
    const policy = { initialMs: 1000, maxMs: 20_000, jitter: 0.2 };
    assert.equal(backoffMs(0, policy, () => 0), 800);
    assert.equal(backoffMs(0, policy, () => 0.999), 1000);
    assert.equal(backoffMs(10, policy, () => 0.5), 18_000);
    assert.equal(backoffMs(1, { initialMs: 333, jitter: 0.2 }, () => 0.5), 599);
  });

  it('counts a negative attempt as the first, and stays finite however many attempts', () => {
    assert.equal(backoffMs(-1, { initialMs: 250 }), 250);
    assert.equal(backoffMs(1e6, { initialMs: 1, maxMs: 5000 }), 5000);
    assert.ok(Number.isFinite(backoffMs(1e6, { initialMs: 1 })));
  });
});

describe('Backoff', () => {
  it('grows with each retry and starts over after a reset', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 400 });
    assert.deepEqual([b.next(), b.next(), b.next(), b.next()], [100, 200, 400, 400]);
    assert.equal(b.attempts, 4);
    b.reset();
    assert.equal(b.next(), 100);
  });
});
