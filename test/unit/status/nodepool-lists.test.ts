import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dibImageList, imageList, imageStatus, labelList, nodeList, requestList } from '../../../lib/status/nodepool-lists.js';
import { NODE_DEFAULTS, type BuildRecord, type LauncherRecord, type NodeRecord, type NodeRequestRecord, type UploadRecord } from '../../../lib/store/models.js';

const T = 1_767_000_000_500; // epoch ms with a fraction of a second
const S = Math.trunc(T / 1000);

function build(diskimage: string, seq: string, patch: Partial<BuildRecord> = {}): BuildRecord {
  return {
    id: `${diskimage}-${seq}`, diskimage, state: 'ready', stateTime: T, created: T, builderHostname: 'builder-a', builderId: 'b-1',
    formats: ['raw', 'qcow2'], files: [], reason: null, progress: null, ...patch,
  };
}

function upload(b: BuildRecord, provider: string, id: string, patch: Partial<UploadRecord> = {}): UploadRecord {
  return {
    id, buildId: b.id, diskimage: b.diskimage, provider, imageName: b.diskimage, state: 'ready', stateTime: T, created: T,
    externalId: `img-${id}`, externalName: `${b.diskimage}-${id}`, format: 'qcow2', reason: null, progress: null, ...patch,
  };
}

function node(id: string, patch: Partial<NodeRecord> = {}): NodeRecord {
  return { ...NODE_DEFAULTS, id, state: 'ready', stateTime: T - 3_600_000, created: T, provider: 'cloud-a', pool: 'main', labels: ['small'], ...patch };
}

describe("Nodepool 11's lists from our records", () => {
  it('dib-image-list: <image>-<build> ids by image then build, sorted formats, paused images say paused, epoch-second ages', () => {
    const list = dibImageList([build('deb', '0000000002', { state: 'building' }), build('alpine', '0000000001'), build('deb', '0000000001')], new Set(['alpine']));
    assert.deepEqual(list.columns.map(([k]) => k), ['id', 'image', 'builder', 'formats', 'state', 'age']);
    assert.deepEqual(list.rows, [
      { id: 'alpine-0000000001', image: 'alpine', builder: 'builder-a', formats: ['qcow2', 'raw'], state: 'paused', age: S, pinned: [], revoked: null },
      { id: 'deb-0000000001', image: 'deb', builder: 'builder-a', formats: ['qcow2', 'raw'], state: 'ready', age: S, pinned: [], revoked: null },
      { id: 'deb-0000000002', image: 'deb', builder: 'builder-a', formats: ['qcow2', 'raw'], state: 'building', age: S, pinned: [], revoked: null },
    ]);
  });

  it('image-list: the build number as id, the upload id, provider, image and cloud names', () => {
    const b = build('deb', '0000000001');
    const list = imageList([upload(b, 'cloud-b', '0000000002', { externalId: null, state: 'uploading' }), upload(b, 'cloud-a', '0000000001')]);
    assert.deepEqual(list.rows, [
      { id: '0000000001', upload_id: '0000000001', provider: 'cloud-a', image: 'deb', external_name: 'deb-0000000001', external_id: 'img-0000000001', state: 'ready', age: S,
        rollout: null, launches: 0, launch_failures: 0, pinned: false },
      { id: '0000000001', upload_id: '0000000002', provider: 'cloud-b', image: 'deb', external_name: 'deb-0000000002', external_id: null, state: 'uploading', age: S,
        rollout: null, launches: 0, launch_failures: 0, pinned: false },
    ]);
  });

  it('image-status: paused by config or operator, a waiting request pending, one beside a running build building', () => {
    const list = imageStatus({
      diskimages: [{ name: 'deb', pause: false }, { name: 'fedora', pause: true }],
      builds: [build('alpine', '0000000003', { state: 'building' })],
      requests: [{ diskimage: 'alpine', requested: T }, { diskimage: 'deb', requested: T - 2000 }],
      pauses: [{ diskimage: 'deb', provider: null, since: T, reason: 'x' }, { diskimage: 'zeta', provider: 'cloud-a', since: T, reason: null }],
    });
    assert.deepEqual(list.rows, [
      { image: 'alpine', paused: false, build_request: 'building', build_request_age: S, pins: [], revocations: [] },
      { image: 'deb', paused: true, build_request: 'pending', build_request_age: S - 2, pins: [], revocations: [] },
      { image: 'fedora', paused: true, build_request: null, build_request_age: null, pins: [], revocations: [] },
    ]);
  });

  it('node-list: Nodepool keys, label a list, age already DD:HH:MM:SS, locked as a word, the hold reason as comment', () => {
    const n = node('0000000007', {
      externalId: 'srv-7', publicIpv4: '203.0.113.7', publicIpv6: '2001:db8::7', privateIpv4: '10.0.0.7', hostname: 'n7', az: 'nova',
      username: 'zuul', connectionPort: 2222, launcher: 'host-PoolWorker.cloud-a-main', allocatedTo: '100-0000000001',
      holdJob: 'tenant/project/job', holdReason: 'debugging', userData: { zuul: 1 }, driverData: null,
    });
    const list = nodeList([n, node('0000000003', { connectionPort: 22.5 })], new Set(['0000000007']), T);
    assert.deepEqual(list.columns.map(([k]) => k), ['id', 'provider', 'label', 'server_id', 'public_ipv4', 'ipv6', 'state', 'age', 'locked',
      'pool', 'hostname', 'private_ipv4', 'AZ', 'username', 'connection_port', 'launcher', 'allocated_to', 'hold_job', 'comment', 'user_data', 'driver_data']);
    assert.deepEqual(list.rows.map((r) => [r.id, r.connection_port, r.locked]), [['0000000003', 'redacted', 'unlocked'], ['0000000007', 2222, 'locked']]);
    assert.deepEqual(list.rows[1], {
      id: '0000000007', provider: 'cloud-a', label: ['small'], server_id: 'srv-7', public_ipv4: '203.0.113.7', ipv6: '2001:db8::7',
      state: 'ready', age: '00:01:00:00', locked: 'locked', pool: 'main', hostname: 'n7', private_ipv4: '10.0.0.7', AZ: 'nova', username: 'zuul',
      connection_port: 2222, launcher: 'host-PoolWorker.cloud-a-main', allocated_to: '100-0000000001', hold_job: 'tenant/project/job',
      comment: 'debugging', user_data: { zuul: 1 }, driver_data: null,
    });
  });

  it('request-list: relative_priority (0 when unset), node_types, nodes, declined_by, event_id', () => {
    const r: NodeRequestRecord = {
      id: '200-0000000004', priority: 200, state: 'requested', stateTime: T, created: T, labels: ['small', 'big'], requestor: 'zuul',
      reuse: true, provider: null, declinedBy: ['l1'], nodes: [], reason: null, requestorSession: null,
    };
    assert.deepEqual(requestList([{ ...r, id: '300-0000000001', relativePriority: 2, eventId: 'ev' }, r]).rows, [
      { id: '200-0000000004', relative_priority: 0, state: 'requested', requestor: 'zuul', node_types: ['small', 'big'], nodes: [], declined_by: ['l1'], event_id: null },
      { id: '300-0000000001', relative_priority: 2, state: 'requested', requestor: 'zuul', node_types: ['small', 'big'], nodes: [], declined_by: ['l1'], event_id: 'ev' },
    ]);
  });

  it("label-list: the union of the registered pools' supported labels", () => {
    const l = (id: string, supportedLabels: string[]): LauncherRecord => ({ id, sessionId: 's', provider: 'p', pool: id, supportedLabels, registered: T });
    assert.deepEqual(labelList([l('a', ['small', 'big']), l('b', ['big', 'tiny'])]).rows, [{ label: 'small' }, { label: 'big' }, { label: 'tiny' }]);
    assert.deepEqual(labelList([]).rows, []);
  });
});
