/**
 * The pure decisions behind the Nodepool 11 openstack keys: dynamic-instance-properties
 * templates, the server metadata order, the node fields an image brings, volume quota
 * (max-volumes, max-volume-gb) and port-cleanup-interval.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dynamicProperties, formatTemplate, pyStr, requestAttrs, type RequestAttrs } from '../../../../lib/drivers/openstack/dynamic-properties.js';
import { cloudImageNodeFields, diskimageNodeFields } from '../../../../lib/drivers/openstack/node-fields.js';
import { notePorts, planPortCleanup, portCheckDue, type PortInfo } from '../../../../lib/drivers/openstack/port-cleanup.js';
import { fits, labelResources, poolLimits, sum } from '../../../../lib/drivers/openstack/quota.js';
import { serverMetadata } from '../../../../lib/drivers/openstack/server-metadata.js';
import type { NodeRequestRecord } from '../../../../lib/store/models.js';

const ATTRS: RequestAttrs = {
  id: '100-0000000007', labels: ['a', 'b'], requestor: 'zuul-scheduler', requestor_data: { job_name: 'tox-py311', build: { n: 3 } },
  relative_priority: 2, event_id: 'ev-1', created_time: 1700000000.5, tenant_name: 'openstack',
};

describe('dynamic-instance-properties', () => {
  it('formats request attributes, items and escapes as Python str.format does', () => {
    const f = (t: string): string => formatTemplate(t, { request: ATTRS });
    assert.equal(f('{request.tenant_name}'), 'openstack');
    assert.equal(f('job={request.requestor_data[job_name]}'), 'job=tox-py311');
    assert.equal(f('{request.requestor_data[build][n]}'), '3');
    assert.equal(f('{request.labels[1]}/{request.labels}'), "b/['a', 'b']");
    assert.equal(f('{{literal}} {request.id}'), '{literal} 100-0000000007');
    assert.equal(f('{request.relative_priority}:{request.created_time}:{request.event_id!r}'), "2:1700000000.5:'ev-1'");
    assert.equal(pyStr(null), 'None');
    assert.equal(pyStr({ k: true }), "{'k': True}");
  });

  it('skips the keys Python could not format and keeps the rest', () => {
    const out = dynamicProperties({
      tenant: '{request.tenant_name}', missing: '{request.requestor_data[nope]}', attr: '{request.nope}', open: 'x{request', spec: '{request.id:>20}',
    }, ATTRS);
    assert.deepEqual(out.values, { tenant: 'openstack' });
    assert.deepEqual(out.skipped.map((s) => s.key), ['missing', 'attr', 'open', 'spec']);
    assert.match(out.skipped[0]?.error ?? '', /KeyError: 'nope'/);
  });

  it('reads the request record as Nodepool\'s NodeRequest attributes', () => {
    const rec: NodeRequestRecord & { requestorData?: unknown } = {
      id: '100-0000000001', priority: 100, state: 'requested', stateTime: 0, created: 1_700_000_000_250, labels: ['a'], requestor: 'zuul',
      reuse: true, provider: null, declinedBy: [], nodes: [], reason: null, requestorSession: null, tenantName: 't1', requestorData: { job_name: 'j' },
    };
    assert.deepEqual(requestAttrs(rec), {
      id: '100-0000000001', labels: ['a'], requestor: 'zuul', requestor_data: { job_name: 'j' }, relative_priority: 0, event_id: null,
      created_time: 1_700_000_000.25, tenant_name: 't1',
    });
  });
});

describe('server metadata', () => {
  it('puts groups first, then instance-properties, then dynamic ones, and the node keys win', () => {
    const md = serverMetadata({
      provider: 'p1', pool: 'main', label: 'a', imageName: 'deb', nodeId: '0000000009',
      instanceProperties: { team: 'ci', groups: 'mine', nodepool_node_id: 'spoofed' }, dynamicProperties: { team: 'infra', tenant: 't1' },
    });
    assert.deepEqual(Object.entries(md), [
      ['groups', 'mine'], ['team', 'infra'], ['nodepool_node_id', '0000000009'], ['tenant', 't1'],
      ['nodepool_pool_name', 'main'], ['nodepool_provider_name', 'p1'], ['nodepool_image_name', 'deb'], ['nodepool_node_label', 'a'],
    ]);
    assert.equal(serverMetadata({ provider: 'p1', pool: 'main', label: 'a', imageName: 'deb', nodeId: '1', instanceProperties: {}, dynamicProperties: {} }).groups, 'p1,deb,a');
  });
});

describe('node fields from the image', () => {
  const prov = { name: 'deb', pause: false, meta: {}, configDrive: true, username: undefined, connectionType: 'ssh' as const, connectionPort: 22, validate: undefined, rollout: undefined };
  it('takes python-path and shell-type from the top-level diskimage, username from the provider diskimage first', () => {
    assert.deepEqual(diskimageNodeFields(prov, undefined), { username: 'zuul', pythonPath: 'auto', shellType: null, connectionType: 'ssh', connectionPort: 22 });
    const top = { username: 'ubuntu', pythonPath: '/usr/bin/python3', shellType: 'sh' };
    assert.deepEqual(diskimageNodeFields(prov, top), { username: 'ubuntu', pythonPath: '/usr/bin/python3', shellType: 'sh', connectionType: 'ssh', connectionPort: 22 });
    assert.equal(diskimageNodeFields({ ...prov, username: 'debian' }, top).username, 'debian');
  });
  it('takes a cloud-image\'s own keys', () => {
    assert.deepEqual(cloudImageNodeFields({
      name: 'w', imageId: 'x', imageName: undefined, username: 'Administrator', configDrive: undefined, pythonPath: 'auto', shellType: 'cmd', connectionType: 'winrm', connectionPort: 5986,
    }), { username: 'Administrator', pythonPath: 'auto', shellType: 'cmd', connectionType: 'winrm', connectionPort: 5986 });
  });
});

describe('volume quota', () => {
  const tiny = { cores: 1, ram: 512, instances: 1 };
  it('counts a boot-from-volume node as one volume of volume-size GB', () => {
    assert.deepEqual(labelResources(tiny, { bootFromVolume: true, volumeSize: 80 }), { ...tiny, volumes: 1, 'volume-gb': 80 });
    assert.deepEqual(labelResources(tiny, { bootFromVolume: false, volumeSize: 80 }), tiny);
    assert.deepEqual(sum([labelResources(tiny, { bootFromVolume: true, volumeSize: 80 }), tiny]), { cores: 2, ram: 1024, instances: 2, volumes: 1, 'volume-gb': 80 });
  });
  it('keeps a pool within max-volumes and max-volume-gb', () => {
    const limit = poolLimits({ maxServers: 10, maxVolumes: 2, maxVolumeGb: 100 });
    const vol = (gb: number) => labelResources(tiny, { bootFromVolume: true, volumeSize: gb });
    assert.equal(fits(limit, sum([vol(50)]), vol(50)), true);
    assert.equal(fits(limit, sum([vol(50)]), vol(60)), false, 'volume-gb');
    assert.equal(fits(limit, sum([vol(10), vol(10)]), vol(10)), false, 'volumes');
    assert.equal(fits(limit, sum([vol(50), vol(50)]), tiny), true, 'a node without a volume still fits');
    assert.equal(fits(poolLimits({ maxServers: 10 }), sum([vol(5000)]), vol(5000)), true, 'unlimited by default');
  });
});

describe('port-cleanup-interval', () => {
  const port = (id: string, status: string, deviceOwner: string | null = 'compute:nova'): PortInfo => ({ id, status, deviceOwner });
  it('deletes only compute ports DOWN on two checks more than the interval apart', () => {
    const first = [port('p1', 'DOWN'), port('p2', 'DOWN', 'network:router_interface'), port('p3', 'ACTIVE'), port('p4', 'DOWN', '')];
    assert.deepEqual(planPortCleanup(undefined, 0, 60, first), { action: 'note' });
    const state = notePorts(0, first);
    assert.deepEqual([...state.down], ['p1', 'p4']);
    assert.equal(portCheckDue(state, 60_000, 60), false, 'not more than 60 s later');
    assert.deepEqual(planPortCleanup(state, 60_999, 60, first), { action: 'wait' });
    assert.equal(portCheckDue(state, 61_000, 60), true);
    const second = [port('p1', 'DOWN'), port('p4', 'ACTIVE'), port('p5', 'DOWN')];
    assert.deepEqual(planPortCleanup(state, 61_000, 60, second), { action: 'delete', ids: ['p1'] });
  });
  it('never runs with interval 0', () => {
    assert.equal(portCheckDue(undefined, 0, 0), false);
    assert.deepEqual(planPortCleanup(notePorts(0, [port('p1', 'DOWN')]), 1e12, 0, [port('p1', 'DOWN')]), { action: 'wait' });
  });
});
