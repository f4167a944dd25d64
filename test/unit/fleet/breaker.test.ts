import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { abandonProbe, afterOutcome, breakerVerdict, CLOSED, settleBreaker, startProbe, type BreakerSettings, type BreakerState } from '../../../lib/fleet/breaker.js';

const S: BreakerSettings = { failures: 3, backoffMs: 10_000, maxBackoffMs: 35_000, probeTimeoutMs: 5_000 };
const fail = (state: BreakerState, at: number): BreakerState => afterOutcome(state, 'failure', at, S);

describe('circuit breaker', () => {
  it('stays closed below N failures in a row; a success resets the count', () => {
    let b = fail(fail(CLOSED, 1), 2);
    assert.deepEqual(b, { state: 'closed', failures: 2 });
    assert.equal(breakerVerdict(b, 3, S), 'take');
    b = afterOutcome(b, 'success', 3, S);
    assert.deepEqual(fail(fail(b, 4), 5), { state: 'closed', failures: 2 });
  });

  it('opens at the Nth failure, holds during the backoff, then lets one probe through', () => {
    const b = fail(fail(fail(CLOSED, 1), 2), 100);
    assert.deepEqual(b, { state: 'open', failures: 3, since: 100, until: 10_100, backoffMs: 10_000 });
    assert.equal(breakerVerdict(b, 10_099, S), 'hold');
    assert.equal(breakerVerdict(b, 10_100, S), 'probe');
    const probing = startProbe(b, 10_100, S);
    assert.equal(probing.state, 'probing');
    assert.equal(breakerVerdict(probing, 10_200, S), 'hold', 'one probe at a time');
    assert.deepEqual(afterOutcome(probing, 'success', 12_000, S), CLOSED);
  });

  it('a failed probe opens it again with the backoff doubled, up to the ceiling; since is kept', () => {
    let b = fail(fail(fail(CLOSED, 0), 0), 0);
    const backoffs: number[] = [];
    let now = 0;
    for (let i = 0; i < 4; i++) {
      now = b.state === 'open' ? b.until : now;
      b = fail(startProbe(b, now, S), now + 1);
      assert.equal(b.state, 'open');
      if (b.state === 'open') {
        backoffs.push(b.backoffMs);
        assert.equal(b.since, 0);
      }
    }
    assert.deepEqual(backoffs, [20_000, 35_000, 35_000, 35_000]);
  });

  it('a probe that never ends counts as failed after the probe timeout', () => {
    const probing = startProbe(fail(fail(fail(CLOSED, 0), 0), 0), 10_000, S);
    assert.equal(settleBreaker(probing, 14_999, S), probing);
    const settled = settleBreaker(probing, 15_000, S);
    assert.deepEqual(settled, { state: 'open', failures: 3, since: 0, until: 35_000, backoffMs: 20_000 });
    assert.equal(breakerVerdict(probing, 15_000, S), 'hold');
    assert.equal(breakerVerdict(probing, 35_000, S), 'probe');
  });

  it('late failures of launches begun before it opened leave the timing alone; a late success closes it', () => {
    const b = fail(fail(fail(CLOSED, 0), 0), 0);
    assert.deepEqual(fail(b, 5_000), { state: 'open', failures: 4, since: 0, until: 10_000, backoffMs: 10_000 });
    assert.deepEqual(afterOutcome(b, 'success', 5_000, S), CLOSED);
  });

  it('a probe is started only from an open breaker whose backoff passed', () => {
    assert.equal(startProbe(CLOSED, 0, S), CLOSED);
    const b = fail(fail(fail(CLOSED, 0), 0), 0);
    assert.equal(startProbe(b, 9_999, S), b);
  });

  it('a probe whose request started no launch gives way at once: open, its backoff over, the next request probes', () => {
    const probing = startProbe(fail(fail(fail(CLOSED, 0), 0), 0), 10_000, S);
    assert.equal(probing.state, 'probing');
    const back = abandonProbe(probing, 12_000);
    assert.deepEqual(back, { state: 'open', failures: 3, since: 0, until: 12_000, backoffMs: 10_000 });
    assert.equal(breakerVerdict(back, 12_000, S), 'probe');
    assert.equal(abandonProbe(CLOSED, 1), CLOSED);
    const open = fail(fail(fail(CLOSED, 0), 0), 0);
    assert.equal(abandonProbe(open, 1), open, 'only a probing breaker');
  });
});
