/**
 * What a Zuul-style client writes into node and request znodes, read back through the
 * ZooKeeper store (real ZooKeeper): on a node, `user_data`, `hold_job`, `comment` and
 * Nodepool's `hold_expiration` (seconds from `state_time`); on a request, `tenant_name`,
 * `relative_priority`, `event_id`, `requestor_data` and `created_time: null`, all kept through
 * the store's own updates.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { ReadCounter, ZkClient } from '../../../lib/store/zookeeper/zk-client.js';
import { MODE } from '../../../lib/store/zookeeper/zk-library.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

let zk: ZooKeeperHandle;
let raw: ZkClient;
let store: ZooKeeperStore;
const chroot = `/consumer-writes-${randomUUID().slice(0, 8)}`;

before(async () => {
  zk = await startZooKeeper();
  raw = await ZkClient.connect({ hosts: zk.connectString, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
  store = await ZooKeeperStore.open({ servers: [{ host: zk.host, port: zk.port, chroot }] });
});

after(async () => {
  await store.close();
  await raw.close();
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

const readJson = async (path: string): Promise<Record<string, unknown>> =>
  JSON.parse((await raw.getData(path))?.data.toString('utf8') ?? '{}') as Record<string, unknown>;

void describe('a Zuul-style client\'s writes, read back by the ZooKeeper store', () => {
  it('reads a hold a consumer wrote (user_data, hold_job, comment, hold_expiration) and keeps it through a store update', async () => {
    const n = await store.createNode({ state: 'in-use', provider: 'static-a', pool: 'main', labels: ['small'], pythonPath: '/usr/bin/python3' });
    const path = `${chroot}/nodepool/nodes/${n.id}`;
    const cur = await readJson(path);
    assert.equal(cur.python_path, '/usr/bin/python3');
    const stateTime = Math.floor(Date.now() / 1000) + 0.25;
    // Zuul's Node.toDict: every key it read, its own fields over them.
    await raw.setData(path, Buffer.from(JSON.stringify({
      ...cur, state: 'hold', state_time: stateTime, user_data: { zuul_system: 'sys-1', project_name: 'org/repo' },
      hold_job: 'tenant-one org/repo check job-1 .*', comment: 'debugging', hold_expiration: 3600,
    })));
    const held = await store.getNode(n.id);
    assert.equal(held?.state, 'hold');
    assert.deepEqual(held?.userData, { zuul_system: 'sys-1', project_name: 'org/repo' });
    assert.equal(held?.holdJob, 'tenant-one org/repo check job-1 .*');
    assert.equal(held?.holdReason, 'debugging');
    assert.equal(held?.holdExpiration, Math.round(stateTime * 1000) + 3_600_000, 'state_time + hold_expiration seconds');

    await store.updateNode(n.id, { reason: 'kept for debugging' });
    const after1 = await readJson(path);
    assert.equal(after1.hold_expiration, 3600, "Nodepool's duration as the consumer wrote it");
    assert.deepEqual([after1.hold_job, after1.comment], ['tenant-one org/repo check job-1 .*', 'debugging']);
    assert.equal((await store.getNode(n.id))?.holdExpiration, Math.round(stateTime * 1000) + 3_600_000);
  });

  it('reads the tenant, relative priority and event id of a request Zuul made, and keeps every key it wrote', async () => {
    const now = Date.now() / 1000;
    const zuul = {
      node_types: ['small'], requestor: 'zuul-scheduler', created_time: null, provider: null, state: 'requested', state_time: now,
      relative_priority: 3, event_id: 'e'.repeat(32), tenant_name: 'tenant-one',
      requestor_data: { build_set_uuid: 'b', tenant_name: 'tenant-one', pipeline_name: 'check', job_uuid: 'j', job_name: 'job-1', span_info: null },
    };
    const made = await raw.create(`${chroot}/nodepool/requests/200-`, Buffer.from(JSON.stringify(zuul)), MODE.persistentSequential);
    const id = made.slice(made.lastIndexOf('/') + 1);
    const r = await store.getRequest(id);
    assert.deepEqual([r?.tenantName, r?.relativePriority, r?.eventId, r?.priority], ['tenant-one', 3, 'e'.repeat(32), 200]);
    await store.updateRequest(id, { state: 'pending' });
    await store.updateRequest(id, { state: 'fulfilled', nodes: ['0000000001'] });
    const stored = await readJson(made);
    for (const [k, v] of Object.entries(zuul)) if (k !== 'state' && k !== 'state_time') assert.deepEqual(stored[k], v, k);
    assert.equal(stored.state, 'fulfilled');
    const listed = (await store.listRequests({ states: ['fulfilled'] })).find((x) => x.id === id);
    assert.deepEqual([listed?.tenantName, listed?.relativePriority, listed?.eventId], ['tenant-one', 3, 'e'.repeat(32)]);
  });
});
