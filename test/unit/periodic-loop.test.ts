import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { defaultPassDeadlineMs, PeriodicLoop, stuckForMs, type LoopHealth } from '../../lib/periodic-loop.js';
import { waitFor } from '../../lib/lifecycle.js';
import { testLogger } from '../support/test-log.js';

/** Collects `n` events of a loop (bounded). */
async function events(loop: PeriodicLoop, n: number, timeoutMs = 5000): Promise<Array<{ ok: boolean; health: LoopHealth; at: number }>> {
  const seen: Array<{ ok: boolean; health: LoopHealth; at: number }> = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${n} passes of ${loop.name} within ${timeoutMs} ms; saw ${seen.length}`)), timeoutMs);
    const push = (ok: boolean, health: LoopHealth): void => {
      seen.push({ ok, health, at: Date.now() });
      if (seen.length < n) return;
      clearTimeout(timer);
      loop.off('pass:complete', onOk);
      loop.off('pass:failed', onFail);
      resolve(seen);
    };
    const onOk = (h: LoopHealth): void => push(true, h);
    const onFail = (_e: Error, h: LoopHealth): void => push(false, h);
    loop.on('pass:complete', onOk);
    loop.on('pass:failed', onFail);
  });
}

describe('PeriodicLoop', () => {
  it('counts consecutive failures with the last error, backs off, and resets on the next success', async () => {
    let calls = 0;
    const loop = new PeriodicLoop({
      name: 'flaky', log: testLogger(), intervalMs: () => 10, backoff: { initialMs: 100, maxMs: 200 },
      pass: async () => {
        calls += 1;
        if (calls <= 3) throw new Error(`boom ${calls}`);
      },
    });
    loop.start();
    const seen = await events(loop, 4);
    await loop.stop();
    assert.deepEqual(seen.map((e) => [e.ok, e.health.consecutiveFailures, e.health.lastError]), [
      [false, 1, 'boom 1'], [false, 2, 'boom 2'], [false, 3, 'boom 3'], [true, 0, null],
    ]);
    const gaps = seen.slice(1).map((e, i) => e.at - (seen[i] as { at: number }).at);
    assert.ok((gaps[0] ?? 0) >= 75, `first backoff ≥ 80 ms (100 ms − 20 % jitter), got ${gaps[0]}`);
    assert.ok((gaps[1] ?? 0) >= 150 && (gaps[2] ?? 0) >= 150, `capped doubling: ${gaps.join(', ')}`);
    const h = loop.health;
    assert.equal(h.passes, 4);
    assert.ok(h.lastSuccess !== null && h.lastPass === h.lastSuccess);
  });

  it('runs again at once when a pass says there is more, and when nudged during a pass', async () => {
    let calls = 0;
    let nudgeDuringPass = false;
    const loop = new PeriodicLoop({
      name: 'busy', log: testLogger(), intervalMs: () => 60_000,
      pass: async () => {
        calls += 1;
        if (nudgeDuringPass) {
          nudgeDuringPass = false;
          loop.nudge();
        }
        return calls < 3;
      },
    });
    loop.start();
    await events(loop, 3, 2000);
    assert.equal(calls, 3, 'two "more" answers ran the next passes at once');
    nudgeDuringPass = true;
    loop.nudge(); // ends the 60 s wait
    await events(loop, 2, 2000); // the nudge inside that pass runs one more
    assert.equal(calls, 5);
    await loop.stop();
  });

  it('stops during a wait at once and during a pass after it; stop is idempotent', async () => {
    let release: (() => void) | undefined;
    let passes = 0;
    const loop = new PeriodicLoop({
      name: 'slow', log: testLogger(), intervalMs: () => 60_000,
      pass: () => {
        passes += 1;
        return passes === 2 ? new Promise<void>((r) => { release = r; }) : Promise.resolve();
      },
    });
    loop.start();
    await once(loop, 'pass:complete');
    const t0 = Date.now();
    loop.nudge();
    while (!release) await new Promise((r) => setTimeout(r, 5));
    const stopped = loop.stop();
    let done = false;
    void stopped.then(() => { done = true; });
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(done, false, 'stop waits for the pass in progress');
    release();
    await stopped;
    await loop.stop();
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(passes, 2);
    assert.throws(() => loop.start(), /cannot start from state stopped/);
  });

  it('goes on passing when its onPass or a listener throws, and stops cleanly', async () => {
    let passes = 0;
    const loop = new PeriodicLoop({
      name: 'noisy', log: testLogger(), intervalMs: () => 5,
      pass: () => { passes += 1; return Promise.resolve(); },
      onPass: () => { throw new TypeError('heartbeat broke'); },
    });
    loop.on('pass:complete', () => { throw new Error('listener broke'); });
    loop.start();
    await waitFor(() => passes >= 3, { timeoutMs: 5000, what: 'three passes despite the throws' });
    await loop.stop();
    assert.equal(loop.health.consecutiveFailures, 0);
  });

  it('does not let a nudge cut a failure backoff short, but ends an idle wait at once', async () => {
    let calls = 0;
    const loop = new PeriodicLoop({
      name: 'failing', log: testLogger(), intervalMs: () => 60_000, backoff: { initialMs: 600, maxMs: 600 },
      pass: async () => {
        calls += 1;
        if (calls <= 2) throw new Error(`boom ${calls}`);
      },
    });
    loop.start();
    const [first] = await events(loop, 1);
    assert.equal(first?.ok, false);
    // A failing pool worker nudged by every store change: nudge it often during its backoffs.
    const nudger = setInterval(() => loop.nudge(), 10);
    let seen: Array<{ ok: boolean; at: number }>;
    try {
      seen = await events(loop, 2, 5000);
    } finally {
      clearInterval(nudger);
    }
    const gaps = seen.map((e, i) => e.at - (i === 0 ? first?.at ?? 0 : (seen[i - 1] as { at: number }).at));
    assert.deepEqual(seen.map((e) => e.ok), [false, true]);
    for (const gap of gaps) {
      assert.ok(gap >= 470, `each backoff (600 ms − 20 % jitter) stood against nudges, gaps ${gaps.join(', ')} ms`);
      assert.ok(gap < 2000, `a nudge during a backoff skips the rest of the 60 s interval, gaps ${gaps.join(', ')} ms`);
    }
    // Passes succeed again: the loop idles for its 60 s interval, and one nudge ends that wait.
    const t0 = Date.now();
    loop.nudge();
    await events(loop, 1, 2000);
    assert.ok(Date.now() - t0 < 1000);
    await loop.stop();
  });

  it('records since when a pass runs and reports it stuck past its deadline; only its own pass clears it', async () => {
    let release: (() => void) | undefined;
    let calls = 0;
    const stuck = new PeriodicLoop({
      name: 'hangs', log: testLogger(), intervalMs: () => 10, passDeadlineMs: () => 200,
      pass: () => {
        calls += 1;
        return calls === 2 ? new Promise<void>((r) => { release = r; }) : Promise.resolve();
      },
    });
    const other = new PeriodicLoop({ name: 'fine', log: testLogger(), intervalMs: () => 10, pass: async () => undefined });
    assert.equal(stuck.health.runningSince, null);
    assert.equal(stuck.health.deadlineMs, 200);
    assert.equal(other.health.deadlineMs, defaultPassDeadlineMs(10));
    stuck.start();
    other.start();
    await waitFor(() => release !== undefined, { timeoutMs: 2000, what: 'the second pass to hang', intervalMs: 5 });
    const since = stuck.health.runningSince;
    assert.ok(typeof since === 'number');
    assert.equal(stuckForMs(stuck.health, Date.now()), null, 'not stuck before its deadline');
    await waitFor(() => stuckForMs(stuck.health, Date.now()) !== null, { timeoutMs: 2000, what: 'the loop to be stuck', intervalMs: 10 });
    await events(other, 3, 2000);
    assert.equal(stuck.health.runningSince, since, "another loop's passes do not refresh the stuck loop's record");
    assert.equal(stuckForMs(other.health, Date.now()), null);
    (release as () => void)();
    await events(stuck, 1, 2000);
    assert.equal(stuckForMs(stuck.health, Date.now()), null);
    await Promise.all([stuck.stop(), other.stop()]);
    assert.equal(stuck.health.runningSince, null);
  });
});
