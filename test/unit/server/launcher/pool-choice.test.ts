/**
 * The pure decisions behind Nodepool 11's pool priority, tenant-resource-limits and
 * max-hold-age (server/launcher/decisions.ts, tenant-limits.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LauncherRecord, NodeRecord, NodeRequestRecord } from '../../../../lib/store/models.js';
import { NODE_DEFAULTS } from '../../../../lib/store/models.js';
import { expiredHeldNodes } from '../../../../server/launcher/decisions.js';
import { placeAmong } from '../../../../lib/fleet/standing.js';
import { limitsOf, sumResources, tenantLimitExceeded } from '../../../../server/launcher/tenant-limits.js';

const T0 = 1_700_000_000_000;

function request(over: Partial<NodeRequestRecord> = {}): NodeRequestRecord {
  return {
    id: '100-0000000001', priority: 100, state: 'requested', stateTime: T0, created: T0, labels: ['small'], requestor: 'zuul',
    reuse: true, provider: null, declinedBy: [], nodes: [], reason: null, requestorSession: null, ...over,
  };
}

function launcher(id: string, over: Partial<LauncherRecord> = {}): LauncherRecord {
  return { id, sessionId: 's', provider: 'p', pool: id, supportedLabels: ['small', 'big'], registered: T0, ...over };
}

function held(id: string, over: Partial<NodeRecord> = {}): NodeRecord {
  return { ...NODE_DEFAULTS, id, state: 'hold', stateTime: T0, created: T0, provider: 'p', pool: 'main', labels: ['small'], ...over };
}

describe('pool priority (Nodepool 11), through placement', () => {
  const settings = { failures: 3, backoffMs: 60_000, maxBackoffMs: 600_000, probeTimeoutMs: 600_000 };
  /** Whether pool `me` (priority `mine`) leaves the request to another among `others`. */
  const leaves = (req: NodeRequestRecord, mine: number, others: LauncherRecord[]): boolean => {
    const placed = placeAmong(req, [launcher('me', { priority: mine }), ...others], T0, settings);
    return placed.take !== undefined && placed.take !== 'p/me';
  };

  it('yields to another pool with a lower priority that serves every label, is not paused and has not declined', () => {
    assert.equal(leaves(request(), 100, [launcher('better', { priority: 10 })]), true);
  });

  it('takes the request when the better pool is paused, has declined it, lacks a label, or is not better', () => {
    const better = (over: Partial<LauncherRecord>) => [launcher('better', { priority: 10, ...over })];
    assert.equal(leaves(request(), 100, better({ paused: true })), false, 'paused (at quota)');
    assert.equal(leaves(request({ declinedBy: ['better'] }), 100, better({})), false, 'declined');
    assert.equal(leaves(request({ labels: ['small', 'gpu'] }), 100, better({})), false, 'lacks gpu');
    assert.equal(leaves(request(), 99, [launcher('old')]), false, 'a record without priority counts as 100');
    assert.equal(leaves(request(), 100, []), false, 'no other pool');
    assert.equal(leaves(request(), 101, [launcher('old')]), true);
    assert.equal(leaves(request(), 1, [launcher('other', { priority: 0, supportedLabels: ['big'] })]), false, 'not to a pool without the label');
  });

  it('between equal pools, each request goes to one of them, the same on every launcher, and requests spread over both', () => {
    const pools = [launcher('me'), launcher('twin')];
    const takers = Array.from({ length: 40 }, (_, i) => placeAmong(request({ id: `100-${String(i).padStart(10, '0')}` }), pools, T0, settings).take);
    assert.deepEqual(takers, Array.from({ length: 40 }, (_, i) => placeAmong(request({ id: `100-${String(i).padStart(10, '0')}` }), [...pools].reverse(), T0, settings).take));
    assert.ok(takers.filter((t) => t === 'p/me').length >= 8 && takers.filter((t) => t === 'p/twin').length >= 8, takers.join(' '));
  });
});

describe('tenant-resource-limits', () => {
  const limits = [{ tenantName: 'a', limits: { instances: 2, cores: 8 } }];

  it('finds the limits of the request tenant only', () => {
    assert.deepEqual(limitsOf('a', limits), { instances: 2, cores: 8 });
    assert.equal(limitsOf('b', limits), undefined);
    assert.equal(limitsOf(null, limits), undefined);
  });

  it('sums node resources key by key, skipping nodes without any (static)', () => {
    assert.deepEqual(sumResources([{ cores: 2, ram: 1024, instances: 1 }, null, { cores: 4, ram: 2048, instances: 1, volumes: 1 }]), { cores: 6, ram: 3072, instances: 2, volumes: 1 });
  });

  it('defers when limit - used - needed goes negative for any resource, and names it', () => {
    const l = { instances: 2, cores: 8 };
    assert.equal(tenantLimitExceeded(l, { instances: 1, cores: 4 }, { instances: 1, cores: 4 }), null, 'exactly at the limit fits');
    assert.deepEqual(tenantLimitExceeded(l, { instances: 1, cores: 6 }, { instances: 1, cores: 4 }), { resource: 'cores', limit: 8, used: 6, needed: 4 });
    assert.deepEqual(tenantLimitExceeded(l, { instances: 2 }, { instances: 1 }), { resource: 'instances', limit: 2, used: 2, needed: 1 });
    assert.equal(tenantLimitExceeded({ 'L-43DA4232': 10 }, {}, { instances: 1 }), null, 'a key the nodes do not carry counts as 0');
  });
});

describe('max-hold-age', () => {
  it('deletes a held node once now - state_time reaches min(hold expiration, max-hold-age)', () => {
    const nodes = [held('own', { holdExpiration: T0 + 30_000 }), held('age'), held('ready', { state: 'ready' })];
    assert.deepEqual(expiredHeldNodes(nodes, 60, T0 + 29_999).map((n) => n.id), []);
    assert.deepEqual(expiredHeldNodes(nodes, 60, T0 + 30_000).map((n) => n.id), ['own'], 'its own expiration, reached exactly');
    assert.deepEqual(expiredHeldNodes(nodes, 60, T0 + 60_000).map((n) => n.id), ['own', 'age'], 'max-hold-age, reached exactly');
    assert.deepEqual(expiredHeldNodes([held('long', { holdExpiration: T0 + 120_000 })], 60, T0 + 60_000).map((n) => n.id), ['long'], 'max-hold-age caps a longer expiration');
    assert.deepEqual(expiredHeldNodes(nodes, 0, T0 + 10 ** 9).map((n) => n.id), ['own'], 'max-hold-age 0: only their own expiration');
  });
});
