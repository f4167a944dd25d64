import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Deadlines } from '../../../lib/gearman/deadlines.js';
import { waitFor } from '../../../lib/lifecycle.js';

/** Deadlines that record which items expired, and when (ms after `t0`). */
function recorder(): { deadlines: Deadlines<string>; expired: Array<{ item: string; ms: number }> } {
  const t0 = performance.now();
  const expired: Array<{ item: string; ms: number }> = [];
  const deadlines = new Deadlines<string>((item) => expired.push({ item, ms: performance.now() - t0 }));
  return { deadlines, expired };
}

void describe('Deadlines', () => {
  void it('expires each item once, not before its deadline, and never a deleted one', async () => {
    const { deadlines, expired } = recorder();
    deadlines.add('deleted', 20);
    deadlines.add('a', 30);
    deadlines.add('b', 60);
    deadlines.delete('deleted');
    assert.equal(deadlines.size, 2);
    await waitFor(() => expired.some((e) => e.item === 'b'), { timeoutMs: 2000, what: 'b expired' });
    assert.deepEqual(expired.map((e) => e.item), ['a', 'b']);
    assert.ok((expired[0]?.ms ?? 0) >= 29 && (expired[1]?.ms ?? 0) >= 59, JSON.stringify(expired));
    assert.equal(deadlines.size, 0);
  });

  void it('an earlier deadline added later still expires first', async () => {
    const { deadlines, expired } = recorder();
    deadlines.add('late', 300);
    deadlines.add('early', 20);
    await waitFor(() => expired.length > 0, { timeoutMs: 2000, what: 'early expired' });
    assert.deepEqual(expired.map((e) => e.item), ['early']);
    assert.ok((expired[0]?.ms ?? 0) < 250, `early expired after ${expired[0]?.ms} ms`);
    await waitFor(() => expired.length > 1, { timeoutMs: 2000, what: 'late expired' });
    assert.deepEqual(expired.map((e) => e.item), ['early', 'late']);
  });

  void it('add() again replaces the deadline, and clear() cancels everything', async () => {
    const { deadlines, expired } = recorder();
    deadlines.add('moved', 20);
    deadlines.add('moved', 80);
    deadlines.add('marker', 100);
    await waitFor(() => expired.some((e) => e.item === 'marker'), { timeoutMs: 2000, what: 'marker expired' });
    assert.deepEqual(expired.map((e) => e.item), ['moved', 'marker']);
    assert.ok((expired[0]?.ms ?? 0) >= 79, `moved expired after ${expired[0]?.ms} ms`);
    deadlines.add('never', 10);
    deadlines.clear();
    assert.equal(deadlines.size, 0);
    deadlines.add('after-clear', 40);
    await waitFor(() => expired.some((e) => e.item === 'after-clear'), { timeoutMs: 2000, what: 'after-clear expired' });
    assert.deepEqual(expired.map((e) => e.item), ['moved', 'marker', 'after-clear']);
  });
});
