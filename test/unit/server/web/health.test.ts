import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LoopHealth } from '../../../../lib/periodic-loop.js';
import { readinessReport } from '../../../../server/web/health.js';

const loop = (name: string, consecutiveFailures = 0, lastError: string | null = null): LoopHealth =>
  ({ name, passes: 3, consecutiveFailures, lastPass: 1, lastSuccess: consecutiveFailures ? null : 1, lastError });

describe('readiness report', () => {
  it('is ready once the providers started and no loop fails', () => {
    const r = readinessReport(true, [loop('deleter'), { ...loop('cleanup'), passes: 0, lastPass: null, lastSuccess: null }]);
    assert.equal(r.ready, true);
    assert.equal(r.text, 'ok');
  });

  it('names every failing loop with its last error, and a start not finished', () => {
    const r = readinessReport(false, [loop('deleter'), loop('min-ready', 2, 'database is locked'), loop('cleanup', 1, 'boom')]);
    assert.equal(r.ready, false);
    assert.equal(r.text, [
      'starting: not every provider has started yet',
      'min-ready: 2 failed passes in a row (last: database is locked)',
      'cleanup: 1 failed pass in a row (last: boom)',
    ].join('\n'));
    assert.deepEqual(r.failing.map((f) => f.loop), ['min-ready', 'cleanup']);
  });
});
