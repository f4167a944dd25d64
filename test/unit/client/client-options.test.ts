import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  acceptPatch, HOLDABLE_STATES, holdPatch, newRequestInput, RELEASABLE_STATES, releasePatch, renewIntervalMs,
} from '../../../lib/client/client-options.js';

describe('client options', () => {
  it('makes requests ephemeral (tied to the session) and reusing by default', () => {
    assert.deepEqual(newRequestInput(['small', 'small'], {}, 'zuul', 's-1'),
      { labels: ['small', 'small'], requestor: 'zuul', reuse: true, provider: null, requestorSession: 's-1' });
  });

  it('passes priority, provider and reuse, and leaves a non-ephemeral request without a session', () => {
    assert.deepEqual(newRequestInput(['large'], { priority: 50, provider: 'cloud-b', reuse: false, ephemeral: false }, 'ci', 's-1'),
      { labels: ['large'], requestor: 'ci', reuse: false, provider: 'cloud-b', requestorSession: null, priority: 50 });
  });

  it('rejects an empty label list and a priority outside 0..999', () => {
    assert.throws(() => newRequestInput([], {}, 'zuul', 's'), RangeError);
    assert.throws(() => newRequestInput(['x'], { priority: 1000 }, 'zuul', 's'), /0 to 999/);
    assert.throws(() => newRequestInput(['x'], { priority: 1.5 }, 'zuul', 's'), RangeError);
  });

  it('renews a session three times per TTL, never more often than every 50 ms', () => {
    assert.equal(renewIntervalMs(30_000), 10_000);
    assert.equal(renewIntervalMs(60), 50);
  });

  it('accepts nodes in use, owned by the session only when it keeps the lock', () => {
    assert.deepEqual(acceptPatch('s-1', true), { state: 'in-use', consumerSession: 's-1', handedOff: false });
    assert.deepEqual(acceptPatch('s-1', false), { state: 'in-use', consumerSession: null, handedOff: true });
  });

  it('holds with a reason and an expiry counted from now', () => {
    assert.deepEqual(holdPatch('debug', 90, 1_000), { state: 'hold', holdReason: 'debug', holdExpiration: 91_000 });
    assert.deepEqual(holdPatch('debug', undefined, 1_000), { state: 'hold', holdReason: 'debug', holdExpiration: null });
    assert.throws(() => holdPatch('debug', 0, 1_000), RangeError);
  });

  it('releases to used from in-use, hold or ready, and holds from ready, in-use or hold', () => {
    assert.deepEqual(releasePatch(), { state: 'used', consumerSession: null, handedOff: false });
    assert.deepEqual([...RELEASABLE_STATES].sort(), ['hold', 'in-use', 'ready']);
    assert.deepEqual([...HOLDABLE_STATES].sort(), ['hold', 'in-use', 'ready']);
  });
});
