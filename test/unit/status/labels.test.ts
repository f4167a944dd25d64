import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LABEL_COLUMNS, labelAttention, labelRow, labelSummaries, type ServingPool } from '../../../lib/status/labels.js';
import type { NodeRecord, NodeState } from '../../../lib/store/models.js';

let seq = 0;
function node(labels: string[], state: NodeState, allocatedTo: string | null = null): NodeRecord {
  seq++;
  return {
    id: String(seq).padStart(10, '0'), state, stateTime: 0, created: 0, provider: 'cloud-a', pool: 'main', labels,
    launcher: null, allocatedTo, hostname: null, interfaceIp: null, publicIpv4: null, publicIpv6: null, privateIpv4: null,
    connectionType: 'ssh', connectionPort: 22, username: null, hostKeys: [], externalId: null, cloud: null, region: null,
    az: null, image: null, resources: null, attributes: {}, reason: null, holdReason: null, holdExpiration: null,
    consumerSession: null,
    handedOff: false,
  };
}

const POOLS: ServingPool[] = [
  { provider: 'cloud-a', pool: 'main', labels: ['small', 'large'] },
  { provider: 'static-1', pool: 'hosts', labels: ['small'] },
];

describe('label presenters', () => {
  it('uses the label-list columns', () => {
    assert.deepEqual([...LABEL_COLUMNS], ['Label', 'Min Ready', 'Ready', 'Allocated', 'In Use', 'Building', 'Providers']);
  });

  it('counts unallocated ready, allocated ready, in-use and building nodes per label, with the pools serving it', () => {
    const nodes = [
      node(['small'], 'ready'), node(['small'], 'ready'), node(['small'], 'ready', '100-0000000001'),
      node(['small'], 'in-use'), node(['small'], 'init'), node(['small'], 'building'), node(['small'], 'used'),
      node(['small', 'large'], 'ready'), node(['large'], 'deleting'),
    ];
    const s = labelSummaries({ labels: [{ name: 'small', minReady: 2 }, { name: 'large', minReady: 0 }], pools: POOLS, nodes });
    assert.deepEqual(s, [
      { label: 'small', minReady: 2, ready: 3, allocated: 1, inUse: 1, building: 2, providers: ['cloud-a/main', 'static-1/hosts'] },
      { label: 'large', minReady: 0, ready: 1, allocated: 0, inUse: 0, building: 0, providers: ['cloud-a/main'] },
    ]);
    assert.deepEqual(labelRow(s[0]!), ['small', '2', '3', '1', '1', '2', 'cloud-a/main,static-1/hosts']);
    assert.deepEqual(labelAttention(s), []);
  });

  it('says which labels no pool serves, and lists labels only nodes still carry', () => {
    const s = labelSummaries({
      labels: [{ name: 'gpu', minReady: 1 }], pools: POOLS, nodes: [node(['old-label'], 'ready'), node(['b-old'], 'hold')],
    });
    assert.deepEqual(s.map((x) => [x.label, x.minReady, x.ready]), [['gpu', 1, 0], ['b-old', null, 0], ['old-label', null, 1]]);
    assert.equal(labelRow(s[2]!)[1], '');
    assert.deepEqual(labelAttention(s), [
      'gpu: no provider pool serves it; requests for it fail',
      'b-old: not defined in the config (nodes still carry it)',
      'old-label: not defined in the config (nodes still carry it)',
    ]);
  });
});
