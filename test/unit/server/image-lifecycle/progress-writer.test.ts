import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../../../lib/lifecycle.js';
import type { JobProgress, UploadProgress } from '../../../../lib/store/models.js';
import { progressWriter, uploadProgressWriter } from '../../../../server/image-lifecycle/progress-writer.js';

describe('progress writer', () => {
  it('writes the first sample, holds back the rest of a burst, then writes the latest one after the interval', async () => {
    const written: JobProgress[] = [];
    const status = progressWriter({ intervalMs: 50, live: () => true, write: (p) => written.push(p) });
    status(1, 10);
    status(2, 10);
    status(3, 10);
    assert.deepEqual(written, [{ numerator: 1, denominator: 10 }]);
    await waitFor(() => written.length === 2, { timeoutMs: 2000, what: 'the held sample written' });
    assert.deepEqual(written[1], { numerator: 3, denominator: 10 });
  });

  it('writes the final step at once and drops what it held back', async () => {
    const written: JobProgress[] = [];
    const status = progressWriter({ intervalMs: 30, live: () => true, write: (p) => written.push(p) });
    status(1, 4);
    status(2, 4);
    status(4, 4);
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.deepEqual(written.map((p) => p.numerator), [1, 4]);
  });

  it('drops a held-back sample once the job is no longer followed', async () => {
    const written: JobProgress[] = [];
    let live = true;
    const status = progressWriter({ intervalMs: 30, live: () => live, write: (p) => written.push(p) });
    status(1, 4);
    status(2, 4);
    live = false;
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.deepEqual(written.map((p) => p.numerator), [1]);
  });

  it('adds the rate and the sample time to upload progress', () => {
    const written: UploadProgress[] = [];
    let now = 1_000_000;
    const status = uploadProgressWriter({ intervalMs: 1000, live: () => true, now: () => now, write: (p) => written.push(p) });
    status(0, 100 * 1024 * 1024);
    now += 500;
    status(25 * 1024 * 1024, 100 * 1024 * 1024); // held back: its sample still counts for the rate
    now += 500;
    status(50 * 1024 * 1024, 100 * 1024 * 1024);
    assert.deepEqual(written, [
      { numerator: 0, denominator: 100 * 1024 * 1024, rate: null, sampledAt: 1_000_000 },
      { numerator: 50 * 1024 * 1024, denominator: 100 * 1024 * 1024, rate: 50 * 1024 * 1024, sampledAt: 1_001_000 },
    ]);
  });
});
