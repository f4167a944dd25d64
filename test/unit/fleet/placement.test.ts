import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { headroomStep, placeRequest, waitReason, type PoolStanding } from '../../../lib/fleet/placement.js';

const pool = (provider: string, over: Partial<PoolStanding> = {}): PoolStanding => ({
  provider, pool: 'main', labels: ['small'], priority: 100, headroom: 1, breaker: 'take', ...over,
});

describe('placement', () => {
  it('takes the pool with the most headroom: A at 80 % used, B at 10 %: B', () => {
    const placed = placeRequest(['small'], [pool('a', { headroom: 0.2 }), pool('b', { headroom: 0.9 })]);
    assert.deepEqual(placed, { take: 'b/main', now: true, reasons: [] });
  });

  it('priority first (Nodepool 11\'s meaning), then headroom in 5 % steps, then the name', () => {
    assert.equal(placeRequest(['small'], [pool('a', { headroom: 0.1, priority: 50 }), pool('b', { headroom: 0.9 })]).take, 'a/main');
    assert.equal(headroomStep(0.52), headroomStep(0.54));
    assert.equal(placeRequest(['small'], [pool('a', { headroom: 0.52 }), pool('b', { headroom: 0.54 })]).take, 'a/main');
    assert.equal(placeRequest(['small'], [pool('b', { headroom: 0.5 }), pool('a', { headroom: 0.5 })]).take, 'a/main');
    assert.equal(placeRequest(['small'], [pool('a', { headroom: 0.5 }), pool('b', { headroom: 0.56 })]).take, 'b/main');
  });

  it('a pool at quota or with its breaker holding leaves the request to one that can serve now', () => {
    const full = pool('a', { headroom: 0, full: { by: 'max-servers', detail: '10 of 10' }, priority: 1 });
    const broken = pool('c', { headroom: 1, breaker: 'hold', breakerSince: 42, priority: 1 });
    assert.equal(placeRequest(['small'], [full, broken, pool('b', { headroom: 0.1 })]).take, 'b/main');
    assert.equal(placeRequest(['small'], [pool('b', { breaker: 'probe', headroom: 0.3 }), pool('d', { headroom: 0.2 })]).take, 'b/main', 'a probe may take one');
  });

  it('when none can serve now, the request waits on the best pool that will, a held breaker last, with every reason', () => {
    const full = pool('a', { headroom: 0, full: { by: 'cloud-quota', detail: 'cores 40 of 40' } });
    const broken = pool('c', { headroom: 0.8, breaker: 'hold', breakerSince: 42 });
    const placed = placeRequest(['small'], [broken, full, pool('x', { labels: ['big'] })]);
    assert.equal(placed.take, 'a/main');
    assert.equal(placed.now, false);
    assert.deepEqual(placed.reasons.map((r) => [r.provider, r.reason, r.since]), [
      ['c', 'breaker-open', 42], ['a', 'at-quota', undefined], ['x', 'label-not-served', undefined],
    ]);
    assert.match(placed.reasons[1]?.detail ?? '', /cloud-quota: cores 40 of 40/);
  });

  it('a label nobody serves is taken by no pool; a paused pool never takes', () => {
    assert.equal(placeRequest(['gpu'], [pool('a')]).take, undefined);
    const placed = placeRequest(['small'], [pool('a', { paused: true })]);
    assert.equal(placed.take, undefined);
    assert.deepEqual(placed.reasons.map((r) => r.reason), ['paused']);
  });

  it('names each reason: label, paused, no ready image, breaker, quota, tenant limit', () => {
    const cases: Array<[Partial<PoolStanding>, string | undefined]> = [
      [{}, undefined],
      [{ labels: ['big'] }, 'label-not-served'],
      [{ paused: true, breaker: 'hold' }, 'paused'],
      [{ noReadyImage: ['small'], full: { by: 'max-servers', detail: '' } }, 'no-ready-image'],
      [{ breaker: 'hold', full: { by: 'max-servers', detail: '' } }, 'breaker-open'],
      [{ full: { by: 'max-servers', detail: '5 of 5' } }, 'at-quota'],
      [{ full: { by: 'tenant-limit', detail: 'tenant t1: 10 of 10 instances' } }, 'tenant-limit'],
    ];
    for (const [over, reason] of cases) assert.equal(waitReason(pool('a', over), ['small'])?.reason, reason, JSON.stringify(over));
    assert.equal(waitReason(pool('a', { labels: ['small', 'big'] }), ['small', 'big']), undefined, 'a multi-label request served by one pool');
  });
});
