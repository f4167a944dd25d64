/**
 * From registrations to placement (lib/fleet/standing.ts) and a standing's checks
 * (lib/store/pool-standing.ts), pure.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { poolHeadroom, poolStandingFull, poolStandingOf, placeAmong, standingChanged, standingOf, waitReasons, breakerSettings } from '../../../lib/fleet/standing.js';
import { standingFrom } from '../../../lib/store/pool-standing.js';
import type { LauncherRecord, NodeRequestRecord, PoolStandingRecord } from '../../../lib/store/models.js';

const T0 = 1_700_000_000_000;
const S = breakerSettings({ failures: 3, backoff: 60, maxBackoff: 600, probeTimeout: 300 });

function launcher(pool: string, over: Partial<LauncherRecord> = {}): LauncherRecord {
  return { id: `nl-1-PoolWorker.cloud-${pool}`, sessionId: 's', provider: 'cloud', pool, supportedLabels: ['small'], registered: T0, priority: 100, ...over };
}

function request(over: Partial<NodeRequestRecord> = {}): NodeRequestRecord {
  return {
    id: '100-0000000001', priority: 100, state: 'requested', stateTime: T0, created: T0, labels: ['small'], requestor: 'zuul',
    reuse: true, provider: null, declinedBy: [], nodes: [], reason: null, requestorSession: null, ...over,
  };
}

const open = (since: number): PoolStandingRecord['breaker'] => ({ state: 'open', failures: 3, since, until: since + 60_000, backoffMs: 60_000 });

describe('pool standing', () => {
  it('headroom: room to launch plus free ready nodes, in 5 % steps; none while the pool waits for room', () => {
    assert.equal(poolHeadroom(8, 0, 10, false), 0.2);
    assert.equal(poolHeadroom(1, 0, 10, false), 0.9);
    assert.equal(poolHeadroom(10, 3, 10, false), 0.3, 'ready, unallocated nodes count as room');
    assert.equal(poolHeadroom(3, 1, 7, false), 0.7, '5/7 = 0.714 → 0.70');
    assert.equal(poolHeadroom(2, 0, 10, true), 0);
    assert.equal(poolHeadroom(0, 0, 0, false), 0, 'a disabled pool');
    assert.equal(poolHeadroom(500, 0, Number.MAX_SAFE_INTEGER, false), 1, 'unlimited max-servers');
  });

  it('full: at max-servers with nothing free, or waiting for the cloud\'s quota', () => {
    assert.deepEqual(poolStandingFull(10, 0, 10, false), { by: 'max-servers', detail: '10 of 10 nodes, none free' });
    assert.equal(poolStandingFull(10, 1, 10, false), undefined);
    assert.equal(poolStandingFull(4, 0, 10, true)?.by, 'cloud-quota');
    assert.equal(poolStandingFull(4, 0, 10, false), undefined);
  });

  it('a registration without a standing (Nodepool 11, or just started) has room and a closed breaker, and is full while paused', () => {
    assert.deepEqual(poolStandingOf(launcher('a'), T0, S), { provider: 'cloud', pool: 'a', labels: ['small'], priority: 100, headroom: 1, breaker: 'take' });
    assert.equal(poolStandingOf(launcher('a', { paused: true }), T0, S).full?.by, 'cloud-quota');
    assert.equal(poolStandingOf(launcher('a', { priority: undefined }), T0, S).priority, 100);
  });

  it('an open breaker holds until its backoff has passed, then lets a probe through; since is when it opened', () => {
    const l = launcher('a', { standing: standingOf({ headroom: 1, breaker: open(T0) }) });
    assert.deepEqual([poolStandingOf(l, T0 + 1000, S).breaker, poolStandingOf(l, T0 + 1000, S).breakerSince], ['hold', T0]);
    assert.equal(poolStandingOf(l, T0 + 60_000, S).breaker, 'probe');
  });

  it('places a request on the pool with room, skipping pools that declined it; a breaker that holds sends it elsewhere', () => {
    const a = launcher('a', { standing: standingOf({ headroom: 0.2, breaker: { state: 'closed', failures: 0 } }) });
    const b = launcher('b', { standing: standingOf({ headroom: 0.9, breaker: { state: 'closed', failures: 0 } }) });
    assert.equal(placeAmong(request(), [a, b], T0, S).take, 'cloud/b');
    assert.equal(placeAmong(request({ declinedBy: [b.id] }), [a, b], T0, S).take, 'cloud/a');
    const broken = launcher('b', { standing: standingOf({ headroom: 0.9, breaker: open(T0) }) });
    assert.equal(placeAmong(request(), [a, broken], T0 + 1000, S).take, 'cloud/a');
  });

  it('a request that names a provider is placed among its pools while one has not declined it', () => {
    const mk = (provider: string, headroom: number): LauncherRecord => ({
      ...launcher('main', { standing: standingOf({ headroom, breaker: { state: 'closed', failures: 0 } }) }), id: `nl-1-PoolWorker.${provider}-main`, provider,
    });
    const [pa, pb] = [mk('pa', 0.1), mk('pb', 1)];
    assert.equal(placeAmong(request({ provider: 'pa' }), [pa, pb], T0, S).take, 'pa/main', 'the named provider, though the other has more room');
    assert.equal(placeAmong(request({ provider: 'pa', declinedBy: [pa.id] }), [pa, pb], T0, S).take, 'pb/main', 'once it declined, any pool');
    assert.equal(placeAmong(request({ provider: 'gone' }), [pa, pb], T0, S).take, 'pb/main', 'a provider with no live pool: any pool');
  });

  it('wait reasons: none when a pool can serve now or the request is not waiting; else each pool\'s, machine-readable', () => {
    const full = launcher('a', { standing: standingOf({ headroom: 0, full: { by: 'max-servers', detail: '10 of 10 nodes, none free' }, breaker: { state: 'closed', failures: 0 } }) });
    const broken = launcher('b', { standing: standingOf({ headroom: 1, breaker: open(T0) }) });
    const other = launcher('c', { supportedLabels: ['big'] });
    assert.deepEqual(waitReasons(request(), [full, launcher('d')], T0, S), []);
    assert.deepEqual(waitReasons(request({ state: 'fulfilled' }), [full], T0, S), []);
    const reasons = waitReasons(request(), [full, broken, other], T0 + 1000, S);
    assert.deepEqual(reasons.map((r) => [`${r.provider}/${r.pool}`, r.reason, r.since]), [
      ['cloud/a', 'at-quota', undefined], ['cloud/b', 'breaker-open', T0], ['cloud/c', 'label-not-served', undefined],
    ]);
    assert.equal(waitReasons(request({ state: 'pending' }), [full], T0, S)[0]?.reason, 'at-quota', 'a pending request paused at quota waits too');
  });

  it('a pool with nothing to boot for a label, or deferring the request\'s tenant, leaves it to one that can serve now, and says why', () => {
    const closed = { state: 'closed', failures: 0 } as const;
    const noImage = launcher('a', { standing: standingOf({ headroom: 1, breaker: closed, noReadyImage: ['small', 'small'] }) });
    const limited = launcher('b', { standing: standingOf({ headroom: 1, breaker: closed, tenantLimited: [{ tenant: 'acme', detail: 'cores: 8 of 8 used, the request needs 2' }] }) });
    const low = launcher('c', { standing: standingOf({ headroom: 0.1, breaker: closed }) });
    assert.deepEqual(noImage.standing?.noReadyImage, ['small'], 'each label once');
    assert.equal(placeAmong(request(), [noImage, low], T0, S).take, 'cloud/c', 'the pool with an image, though with less room');
    assert.equal(placeAmong(request({ tenantName: 'acme' }), [limited, low], T0, S).take, 'cloud/c');
    assert.equal(placeAmong(request({ tenantName: 'other' }), [limited, low], T0, S).take, 'cloud/b', 'another tenant is not deferred there');
    assert.equal(placeAmong(request(), [limited, low], T0, S).take, 'cloud/b', 'nor a request of no tenant');
    const reasons = waitReasons(request({ tenantName: 'acme' }), [noImage, limited], T0, S);
    assert.deepEqual(reasons.map((r) => [r.pool, r.reason, r.detail]), [
      ['a', 'no-ready-image', 'no ready image for small'], ['b', 'tenant-limit', 'tenant acme: cores: 8 of 8 used, the request needs 2'],
    ]);
    assert.equal(placeAmong(request({ tenantName: 'acme' }), [noImage, limited], T0, S).now, false, 'it waits');
  });

  it('a standing is written only when it changed', () => {
    const s = standingOf({ headroom: 0.5, breaker: { state: 'closed', failures: 1 } });
    assert.equal(standingChanged(undefined, s), true);
    assert.equal(standingChanged(standingOf({ headroom: 0.5, breaker: { state: 'closed', failures: 1 } }), s), false);
    assert.equal(standingChanged(standingOf({ headroom: 0.5, breaker: { state: 'closed', failures: 2 } }), s), true);
  });

  it('reads back only a whole standing: anything else is none', () => {
    const whole = { headroom: 0.35, full: { by: 'cloud-quota', detail: 'x' }, breaker: { state: 'probing', failures: 4, since: T0, probeStarted: T0 + 5, backoffMs: 1000 } };
    assert.deepEqual(standingFrom(whole), whole);
    assert.deepEqual(standingFrom({ ...whole, full: null }), { headroom: 0.35, breaker: whole.breaker });
    for (const bad of [null, 'x', { ...whole, headroom: 1.5 }, { ...whole, headroom: '1' }, { ...whole, breaker: { state: 'open', failures: 1 } },
      { ...whole, breaker: { state: 'weird', failures: 1 } }, { ...whole, full: { by: 'disk', detail: '' } }, { ...whole, breaker: { state: 'closed', failures: -1 } }]) {
      assert.equal(standingFrom(bad), undefined, JSON.stringify(bad));
    }
    const told = { headroom: 1, breaker: { state: 'closed', failures: 0 }, noReadyImage: ['small'], tenantLimited: [{ tenant: 'acme', detail: 'd' }] };
    assert.deepEqual(standingFrom(told), told);
    assert.deepEqual(standingFrom({ ...told, noReadyImage: [], tenantLimited: null }), { headroom: 1, breaker: told.breaker }, 'empty lists are none');
    for (const bad of [{ ...told, noReadyImage: 'small' }, { ...told, noReadyImage: [1] }, { ...told, tenantLimited: [{ tenant: 'acme' }] },
      { ...told, tenantLimited: { acme: 'd' } }, { ...told, noReadyImage: new Array(10_001).fill('x') }]) {
      assert.equal(standingFrom(bad), undefined, JSON.stringify(bad).slice(0, 120));
    }
  });
});
