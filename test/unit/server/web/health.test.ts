import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LoopHealth } from '../../../../lib/periodic-loop.js';
import { readinessReport } from '../../../../server/web/health.js';

const loop = (name: string, consecutiveFailures = 0, lastError: string | null = null): LoopHealth =>
  ({ name, passes: 3, consecutiveFailures, lastPass: 1, lastSuccess: consecutiveFailures ? null : 1, lastError });

describe('readiness report', () => {
  it('is ready once the providers started and no loop fails', () => {
    const r = readinessReport(true, [loop('deleter'), { ...loop('cleanup'), passes: 0, lastPass: null, lastSuccess: null }], 1000);
    assert.equal(r.ready, true);
    assert.equal(r.text, 'ok');
  });

  it('names every failing loop with its last error, and a start not finished', () => {
    const r = readinessReport(false, [loop('deleter'), loop('min-ready', 2, 'database is locked'), loop('cleanup', 1, 'boom')], 1000);
    assert.equal(r.ready, false);
    assert.equal(r.text, [
      'starting: not every provider has started yet',
      'min-ready: 2 failed passes in a row (last: database is locked)',
      'cleanup: 1 failed pass in a row (last: boom)',
    ].join('\n'));
    assert.deepEqual(r.failing.map((f) => f.loop), ['min-ready', 'cleanup']);
  });

  it('is not ready while a pass runs past its bound, and names the loop and for how long', () => {
    const now = 1_000_000;
    const running = (name: string, since: number, deadlineMs: number): LoopHealth => ({ ...loop(name), runningSince: since, deadlineMs });
    const loops = [running('deleter', now - 12 * 60_000, 5 * 60_000), running('cleanup', now - 1000, 5 * 60_000), loop('min-ready')];
    const r = readinessReport(true, loops, now);
    assert.equal(r.ready, false);
    assert.equal(r.text, 'deleter: pass running for 00:00:12:00, past its bound of 00:00:05:00');
    assert.deepEqual(r.stuck, [{ loop: 'deleter', runningSince: now - 12 * 60_000, runningMs: 12 * 60_000, deadlineMs: 5 * 60_000 }]);
    assert.equal(readinessReport(true, loops, now - 10 * 60_000).ready, true, 'within its bound it is only busy');
  });
});
