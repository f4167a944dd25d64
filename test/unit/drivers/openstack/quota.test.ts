import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type ServerUsage, cloudLimits, fits, poolLimits, sum, unmanagedUsage, UNLIMITED, ZERO } from '../../../../lib/drivers/openstack/quota.js';

const r = (cores: number, ram: number, instances: number) => ({ cores, ram, instances });

describe('quota arithmetic', () => {
  it('adds resources', () => {
    assert.deepEqual(sum([r(1, 512, 1), r(2, 4096, 1)]), r(3, 4608, 2));
    assert.deepEqual(sum([]), ZERO);
  });

  it('fits only when every dimension stays within its limit', () => {
    assert.equal(fits(r(4, 4096, 2), r(2, 2048, 1), r(2, 2048, 1)), true);
    assert.equal(fits(r(4, 4096, 2), r(2, 2048, 1), r(3, 1, 1)), false, 'cores');
    assert.equal(fits(r(4, 4096, 2), r(2, 2048, 1), r(1, 2049, 1)), false, 'ram');
    assert.equal(fits(r(4, 4096, 1), r(0, 0, 1), r(1, 1, 1)), false, 'instances');
    assert.equal(fits(UNLIMITED, r(1e9, 1e9, 1e9), r(1, 1, 1)), true);
  });

  it('turns pool keys into limits, absent ones unlimited', () => {
    const noVolumeLimit = { volumes: Infinity, 'volume-gb': Infinity };
    assert.deepEqual(poolLimits({ maxServers: 2 }), { ...r(Infinity, Infinity, 2), ...noVolumeLimit });
    assert.deepEqual(poolLimits({ maxServers: Number.MAX_SAFE_INTEGER, maxCores: 8, maxRam: 1024 }), { ...r(8, 1024, Infinity), ...noVolumeLimit });
    assert.deepEqual(poolLimits({ maxServers: 2, maxVolumes: 3, maxVolumeGb: 150 }), { ...r(Infinity, Infinity, 2), volumes: 3, 'volume-gb': 150 });
    assert.equal(fits(poolLimits({ maxServers: 0 }), ZERO, r(1, 1, 1)), false);
  });

  it('reads Nova limits with -1 as unlimited', () => {
    const lim = { maxTotalInstances: 10, maxTotalCores: -1, maxTotalRAMSize: 51200, totalInstancesUsed: 3, totalCoresUsed: 3, totalRAMUsed: 1536 };
    assert.deepEqual(cloudLimits(lim), r(Infinity, 51200, 10));
  });

  it('counts foreign and leaked servers as unmanaged, ours with a record not', () => {
    const servers: ServerUsage[] = [
      { id: 's1', metadata: { nodepool_provider_name: 'p1', nodepool_node_id: '0000000001' }, resources: r(1, 512, 1) },
      { id: 's2', metadata: { nodepool_provider_name: 'p1', nodepool_node_id: '0000000002' }, resources: r(2, 2048, 1) },
      { id: 's3', metadata: { nodepool_provider_name: 'other', nodepool_node_id: '0000000001' }, resources: r(4, 4096, 1) },
      { id: 's4', metadata: {}, resources: null },
    ];
    assert.deepEqual(unmanagedUsage(servers, 'p1', [{ id: '0000000001', externalId: 's1' }]), r(6, 6144, 3));
  });

  it('does not count a leaked server twice once the cleanup took it over as a deleting record', () => {
    // The cleanup's record has a new id but carries the server's id; the handler counts that record.
    const servers: ServerUsage[] = [{ id: 's2', metadata: { nodepool_provider_name: 'p1', nodepool_node_id: '0000000002' }, resources: r(2, 2048, 1) }];
    assert.deepEqual(unmanagedUsage(servers, 'p1', [{ id: '0000000007', externalId: 's2' }]), ZERO);
  });
});
