import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LauncherRecord, NodeRecord, NodeRequestRecord } from '../../../../lib/store/models.js';
import {
  declineReason, deleterVerdict, expiredHeldNodes, expiredReadyNodes, launcherId, MIN_READY_REQUESTOR, minReadyNeeds,
  declinableStates, stateAfterDecline, takes, yieldsToPreferredProvider,
} from '../../../../server/launcher/decisions.js';

const T0 = 1_700_000_000_000;

function node(over: Partial<NodeRecord> = {}): NodeRecord {
  return {
    id: '0000000001', state: 'ready', stateTime: T0, created: T0, provider: 'cloud', pool: 'main', labels: ['small'],
    launcher: null, allocatedTo: null, hostname: null, interfaceIp: null, publicIpv4: null, publicIpv6: null, privateIpv4: null,
    connectionType: 'ssh', connectionPort: 22, username: null, hostKeys: [], externalId: null, cloud: null, region: null, az: null,
    image: null, resources: null, attributes: {}, reason: null, holdReason: null, holdExpiration: null, consumerSession: null, handedOff: false, ...over,
  };
}

function request(over: Partial<NodeRequestRecord> = {}): NodeRequestRecord {
  return {
    id: '100-0000000001', priority: 100, state: 'requested', stateTime: T0, created: T0, labels: ['small'], requestor: 'zuul',
    reuse: true, provider: null, declinedBy: [], nodes: [], reason: null, requestorSession: null, ...over,
  };
}

const launcher = (id: string, provider: string): LauncherRecord => ({ id, sessionId: 's', provider, pool: 'main', supportedLabels: [], registered: T0 });
const pool = { name: 'main', maxServers: 5, labels: ['small', 'large'], nodeAttributes: {} };

describe('launcher decisions', () => {
  it('names launchers as Nodepool does', () => {
    assert.equal(launcherId('host', 42, 'cloud', 'main'), 'host-42-PoolWorker.cloud-main');
  });

  it('a pool that cannot launch never takes a reuse: false request, but takes min-ready ones (to decline them)', () => {
    assert.equal(takes(request({ reuse: false }), false), false);
    assert.equal(takes(request({ reuse: true }), false), true);
    assert.equal(takes(request({ reuse: false, requestor: MIN_READY_REQUESTOR }), false), true);
    assert.equal(takes(request({ reuse: false }), true), true);
  });

  it('declines a disabled pool and labels it does not serve, in that order', () => {
    assert.equal(declineReason(request(), { ...pool, maxServers: 0 }), 'pool is disabled by max-servers');
    assert.equal(declineReason(request({ labels: ['small', 'gpu', 'gpu', 'arm'] }), pool), 'node type(s) [gpu, arm] not available');
    assert.equal(declineReason(request({ labels: ['small', 'large', 'small'] }), pool), null);
  });

  it('fails a request only when every live launcher has declined it', () => {
    const live = [launcher('a', 'x'), launcher('b', 'y')];
    assert.equal(stateAfterDecline(['a'], live), 'requested');
    assert.equal(stateAfterDecline(['a', 'b'], live), 'failed');
    assert.equal(stateAfterDecline(['a', 'gone'], [launcher('a', 'x')]), 'failed');
    // In a fleet, a configured pool nobody registers (between owners) that could serve it keeps it waiting.
    const between = { provider: 'dead-owners', pool: { ...pool, name: 'main' } };
    assert.equal(stateAfterDecline(['a', 'b'], live, request(), [between]), 'requested');
    assert.equal(stateAfterDecline(['a', 'b'], live, request({ labels: ['gpu'] }), [between]), 'failed', 'not a pool that serves it');
    assert.equal(stateAfterDecline(['a', 'b'], live, request(), [{ provider: 'dead-owners', pool: { ...pool, maxServers: 0 } }]), 'failed', 'nor a disabled one');
    assert.equal(stateAfterDecline(['a', 'b', 'c'], [...live, launcher('c', 'dead-owners')], request(), [between]), 'failed', 'registered again, and it declined too');
    // A handler declines a pending request only once it marked it pending itself.
    assert.deepEqual(declinableStates(false), ['requested']);
    assert.deepEqual(declinableStates(true), ['requested', 'pending']);
  });

  it('yields to a preferred provider only while it has launchers that have not declined', () => {
    const live = [launcher('x1', 'x'), launcher('y1', 'y')];
    assert.equal(yieldsToPreferredProvider(request({ provider: 'y' }), 'x', live), true);
    assert.equal(yieldsToPreferredProvider(request({ provider: 'y', declinedBy: ['y1'] }), 'x', live), false);
    assert.equal(yieldsToPreferredProvider(request({ provider: 'nowhere' }), 'x', live), false);
    assert.equal(yieldsToPreferredProvider(request({ provider: 'x' }), 'x', live), false);
    assert.equal(yieldsToPreferredProvider(request(), 'x', live), false);
  });

  it('deletes used, failed, aborted, deleting and abandoned building nodes; keeps ready, held and owned in-use ones', () => {
    for (const state of ['used', 'failed', 'aborted', 'deleting', 'building', 'init'] as const) assert.equal(deleterVerdict(node({ state }), true), 'delete', state);
    for (const state of ['ready', 'hold'] as const) assert.equal(deleterVerdict(node({ state }), false), 'keep', state);
    assert.equal(deleterVerdict(node({ state: 'in-use', consumerSession: null, handedOff: true }), false), 'keep', 'handed off: kept until released');
    assert.equal(deleterVerdict(node({ state: 'in-use', consumerSession: null, handedOff: false }), false), 'delete', 'unlocked, no session, not handed off: its consumer is gone');
    assert.equal(deleterVerdict(node({ state: 'in-use', consumerSession: 's1' }), true), 'keep');
    assert.equal(deleterVerdict(node({ state: 'in-use', consumerSession: 's1' }), false), 'delete');
  });

  it('expires unallocated ready nodes past the smallest max-ready-age of their labels', () => {
    const ages = new Map([['small', 60], ['large', 0]]);
    const nodes = [
      node({ id: '1', stateTime: T0 - 61_000 }),
      node({ id: '2', stateTime: T0 - 59_000 }),
      node({ id: '3', stateTime: T0 - 61_000, allocatedTo: '100-1' }),
      node({ id: '4', stateTime: T0 - 999_000, labels: ['large'] }),
      node({ id: '5', stateTime: T0 - 61_000, state: 'in-use' }),
    ];
    assert.deepEqual(expiredReadyNodes(nodes, ages, T0).map((n) => n.id), ['1']);
  });

  it('expires held nodes at their own expiration or max-hold-age, whichever comes first', () => {
    const nodes = [
      node({ id: '1', state: 'hold', stateTime: T0 - 100_000 }),
      node({ id: '2', state: 'hold', stateTime: T0 - 10_000, holdExpiration: T0 - 1 }),
      node({ id: '3', state: 'hold', stateTime: T0 - 10_000, holdExpiration: T0 + 1000 }),
      node({ id: '4', state: 'ready', stateTime: T0 - 100_000 }),
    ];
    assert.deepEqual(expiredHeldNodes(nodes, 60, T0).map((n) => n.id), ['1', '2']);
    assert.deepEqual(expiredHeldNodes(nodes, 0, T0).map((n) => n.id), ['2']);
  });

  it('asks min-ready requests for the shortfall of ready, unallocated nodes of servable labels without one outstanding', () => {
    const labels = [{ name: 'small', minReady: 3 }, { name: 'large', minReady: 1 }, { name: 'off', minReady: 0 }, { name: 'gpu', minReady: 2 }, { name: 'busy', minReady: 2 }];
    const nodes = [node({ id: '1' }), node({ id: '2', allocatedTo: '100-9' }), node({ id: '3', state: 'building' }), node({ id: '4', labels: ['large'] })];
    const requests = [request({ labels: ['busy'], requestor: MIN_READY_REQUESTOR, state: 'pending' }), request({ labels: ['small'], requestor: 'zuul' })];
    const needs = minReadyNeeds(labels, nodes, requests, (l) => l !== 'gpu');
    assert.deepEqual([...needs], [['small', 2]]);
  });

});
