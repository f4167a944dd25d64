import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { addRateSample, RATE_WINDOW_MS, transferRate, type RateSample } from '../../../../server/image-lifecycle/transfer-rate.js';

const MiB = 1024 * 1024;

/** Feeds `samples` one by one, as WORK_STATUS packets arrive. */
function feed(samples: Array<[at: number, bytes: number]>, windowMs = RATE_WINDOW_MS): RateSample[] {
  return samples.reduce<RateSample[]>((w, [at, bytes]) => addRateSample(w, { at, bytes }, windowMs), []);
}

describe('transfer rate', () => {
  it('has no rate from a single sample or samples too close together', () => {
    assert.equal(transferRate([]), null);
    assert.equal(transferRate(feed([[1000, 5 * MiB]])), null);
    assert.equal(transferRate(feed([[1000, 5 * MiB], [1050, 6 * MiB]])), null);
  });

  it('is the bytes gained over the time between the first and last sample, in bytes per second', () => {
    assert.equal(transferRate(feed([[0, 0], [250, 25 * MiB], [500, 50 * MiB], [1000, 100 * MiB]])), 100 * MiB);
  });

  it('looks only at the last few seconds, so a slowdown shows', () => {
    // 100 MiB/s for 10 s, then 10 MiB/s for 6 s: the window holds only the slow part.
    const fast = Array.from({ length: 11 }, (_, i): [number, number] => [i * 1000, i * 100 * MiB]);
    const slow = Array.from({ length: 6 }, (_, i): [number, number] => [11_000 + i * 1000, 1000 * MiB + (i + 1) * 10 * MiB]);
    const w = feed([...fast, ...slow]);
    assert.ok(w.length <= 7, `window bounded (${w.length} samples)`);
    assert.equal(transferRate(w), 10 * MiB);
  });

  it('keeps the newest sample older than the window, so a slow sender still has a rate', () => {
    const w = feed([[0, 0], [8000, 80 * MiB]], 5000);
    assert.deepEqual(w, [{ at: 0, bytes: 0 }, { at: 8000, bytes: 80 * MiB }]);
    assert.equal(transferRate(w), 10 * MiB);
  });

  it('starts over when the bytes go down (the upload was retried) or the clock goes back', () => {
    const retried = feed([[0, 0], [1000, 300 * MiB], [2000, 1 * MiB]]);
    assert.deepEqual(retried, [{ at: 2000, bytes: 1 * MiB }]);
    assert.equal(transferRate(retried), null);
    assert.deepEqual(feed([[5000, 10], [4000, 20]]), [{ at: 4000, bytes: 20 }]);
  });

  it('is zero while nothing moves', () => {
    assert.equal(transferRate(feed([[0, 7 * MiB], [3000, 7 * MiB]])), 0);
  });
});
