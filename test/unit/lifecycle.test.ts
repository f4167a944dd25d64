import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WaitTimeoutError } from '../../lib/errors.js';
import { KeptUnlessFailed, pollUntil, retryWithBackoff, waitFor } from '../../lib/lifecycle.js';

describe('pollUntil and waitFor', () => {
  it('returns the first value an attempt gives, passing the time left', async () => {
    const left: number[] = [];
    let n = 0;
    const v = await pollUntil(async (remaining) => {
      left.push(remaining);
      return ++n === 3 ? 'ready' : undefined;
    }, { timeoutMs: 5000, intervalMs: 10 });
    assert.equal(v, 'ready');
    assert.equal(left.length, 3);
    assert.ok(left.every((ms) => ms > 0 && ms <= 5000));
  });

  it('gives up at the deadline with one last attempt there, never waiting past it', async () => {
    const t0 = Date.now();
    let attempts = 0;
    // waits of 500 and 1000 ms: the second is cut to the deadline; a loaded machine would have
    // to oversleep the first by 700 ms to change the count
    const v = await pollUntil(() => { attempts += 1; return undefined; }, { timeoutMs: 1200, intervalMs: (k) => 500 * (k + 1) });
    const took = Date.now() - t0;
    assert.equal(v, undefined);
    assert.equal(attempts, 3, 'at 0, 500 and 1200 ms (the second wait cut to the deadline)');
    assert.ok(took >= 1195 && took < 5000, `took ${took} ms`);
  });

  it('throws what an attempt throws, and the signal\'s reason when aborted', async () => {
    await assert.rejects(pollUntil(() => { throw new RangeError('gone'); }, { timeoutMs: 1000 }), RangeError);
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('stopped')), 20);
    await assert.rejects(pollUntil(() => undefined, { timeoutMs: 10_000, intervalMs: 5000, signal: ac.signal }), /stopped/);
  });

  it('waitFor names what it waited for, with the last error as cause', async () => {
    await assert.rejects(waitFor(() => { throw new Error('not yet'); }, { timeoutMs: 60, what: 'the moon' }), (e: unknown) =>
      e instanceof WaitTimeoutError && e.message === 'timed out after 60 ms waiting for the moon' && (e.cause as Error).message === 'not yet');
    assert.equal(await waitFor(() => 7, { timeoutMs: 10, what: 'seven' }), 7);
  });
});

describe('KeptUnlessFailed', () => {
  it('makes the value once for every caller, tries again after a failure, and forgets on clear()', async () => {
    let made = 0;
    let fail = true;
    const kept = new KeptUnlessFailed(async () => {
      made++;
      if (fail) throw new Error(`attempt ${made} failed`);
      return made;
    });
    await assert.rejects(kept.get(), /attempt 1 failed/);
    fail = false;
    assert.deepEqual(await Promise.all([kept.get(), kept.get()]), [2, 2]);
    assert.equal(await kept.get(), 2);
    kept.clear();
    assert.equal(await kept.get(), 3);
    assert.equal(made, 3);
  });
});

describe('retryWithBackoff', () => {
  it('tries again after each failure it accepts, with growing waits, and resolves with the first success', async () => {
    const at: number[] = [];
    const told: number[] = [];
    const v = await retryWithBackoff(async () => {
      at.push(Date.now());
      if (at.length < 4) throw new Error(`no answer ${at.length}`);
      return 'recorded';
    }, { retryable: () => true, initialMs: 20, maxMs: 40, onRetry: (_err, n) => told.push(n) });
    assert.equal(v, 'recorded');
    assert.deepEqual(told, [0, 1, 2]);
    const gaps = at.slice(1).map((t, i) => t - (at[i] as number));
    // 20, 40, 40 ms less up to 20 % jitter (timers may run late, never early)
    assert.ok((gaps[0] as number) >= 15 && (gaps[1] as number) >= 31 && (gaps[2] as number) >= 31, `gaps ${gaps.join(', ')}`);
  });

  it('throws the first failure it refuses, without waiting', async () => {
    let attempts = 0;
    await assert.rejects(retryWithBackoff(async () => {
      attempts += 1;
      throw new Error(attempts === 1 ? 'transient' : 'final');
    }, { retryable: (err) => (err as Error).message === 'transient', initialMs: 5, maxMs: 5 }), /final/);
    assert.equal(attempts, 2);
  });
});
