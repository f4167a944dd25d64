import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { findLeakedServers } from '../../../../lib/drivers/openstack/leaks.js';

const server = (id: string, meta: Record<string, string>) => ({ id, name: `host-${id}`, metadata: meta });

describe('leak detection', () => {
  it('finds our servers whose node record is gone and that no record covers by external id', () => {
    const servers = [
      server('a', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000001', nodepool_node_label: 'small', nodepool_pool_name: 'main' }),
      server('b', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000002' }),
      server('c', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000003' }),
      server('d', { nodepool_provider_name: 'p2', nodepool_node_id: '0000000009' }),
      server('e', {}),
    ];
    const nodes = [{ id: '0000000002', externalId: 'b' }, { id: '0000000007', externalId: 'c' }];
    assert.deepEqual(findLeakedServers(servers, 'p1', nodes), [
      { externalId: 'a', name: 'host-a', nodeId: '0000000001', pool: 'main', labels: ['small'] },
    ]);
  });

  it('treats a server without a node id as leaked, with an empty pool and no labels', () => {
    assert.deepEqual(findLeakedServers([server('x', { nodepool_provider_name: 'p1' })], 'p1', []),
      [{ externalId: 'x', name: 'host-x', nodeId: null, pool: '', labels: [] }]);
  });

  it('covers a launching node\'s server before its id is recorded, but not an earlier attempt once the node names another server', () => {
    const servers = [
      server('first', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000004' }),
      server('second', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000004' }),
      server('booting', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000005' }),
    ];
    const nodes = [{ id: '0000000004', externalId: 'second' }, { id: '0000000005', externalId: null }];
    assert.deepEqual(findLeakedServers(servers, 'p1', nodes).map((l) => [l.externalId, l.nodeId]), [['first', '0000000004']]);
  });
});


describe('leak detection past corrupt records and other installations (issue 31)', () => {
  const servers = [
    server('named', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000011' }),
    server('by-external-id', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000012' }),
    server('taken-over', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000001' }),
    server('leaked', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000013' }),
  ];

  it('counts a corrupt record as covering every server of its node id and the server its external id names', () => {
    const corrupt = [{ id: '0000000011', externalId: null }, { id: '0000000099', externalId: 'taken-over' }, { id: '0000000012', externalId: 'elsewhere' }];
    assert.deepEqual(findLeakedServers(servers, 'p1', [], { corrupt }).map((l) => l.externalId), ['leaked']);
    assert.deepEqual(findLeakedServers(servers, 'p1', []).map((l) => l.externalId), ['named', 'by-external-id', 'taken-over', 'leaked'], 'without them all four are leaks');
  });

  it("leaves another installation's servers alone and judges servers without the key as before", () => {
    const tagged = [
      server('mine', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000021', nodepool_installation_id: 'inst-a' }),
      server('theirs', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000022', nodepool_installation_id: 'inst-b' }),
      server('untagged', { nodepool_provider_name: 'p1', nodepool_node_id: '0000000023' }),
    ];
    assert.deepEqual(findLeakedServers(tagged, 'p1', [], { installation: 'inst-a' }).map((l) => l.externalId), ['mine', 'untagged']);
  });
});
