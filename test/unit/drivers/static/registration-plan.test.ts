import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { StaticHost, StaticNodeConfig } from '../../../../lib/drivers/static/config.js';
import { acceptScan, freeSlots, planRegistration, registrationFields, skipsScan, type RegistrationAction, type ScanOutcome } from '../../../../lib/drivers/static/registration-plan.js';
import type { NodeRecord } from '../../../../lib/store/models.js';

const ED = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIALxfbX9TwoknOH3jri1F6wjGMKQSpsD6S1WXU/kTBfV';
const ED2 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM1qNexya9cNGntI0Mw7ddjnvYrt4B9xRaz50xQ7c2+r';
const EC = 'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBL2zmxqKp9ukyVVxHqT69o3ph5p5z2YZhUzQT/1w5iNOhHkmC5jEaIIwkRMa6pXcAM5G6HEvINKUD8NpXYhb7+U=';

function host(name: string, over: Partial<StaticNodeConfig> = {}, pool = 'main'): StaticHost {
  const node: StaticNodeConfig = {
    name, labels: ['small'], username: 'zuul', timeout: 5, hostKey: [], hostKeyChecking: true, pythonPath: 'auto', shellType: undefined, connectionPort: 22, connectionType: 'ssh', maxParallelJobs: 1, ...over,
  };
  return { id: `${name}:${node.connectionPort}`, pool, attributes: {}, node };
}

let nextId = 1;
/** Slots handed out so far per host (each test's records get slots 0, 1, … unless told otherwise). */
const slotsOf = new WeakMap<StaticHost, number>();
function record(h: StaticHost, over: Partial<NodeRecord> = {}): NodeRecord {
  const slot = slotsOf.get(h) ?? 0;
  slotsOf.set(h, slot + 1);
  const f = registrationFields('lab', h, [EC, ED], slot);
  return {
    id: String(nextId++).padStart(10, '0'), stateTime: 0, created: 0, allocatedTo: null, privateIpv4: null, externalId: null,
    cloud: null, region: null, az: null, image: null, resources: null, reason: null, holdReason: null, holdExpiration: null,
    consumerSession: null, launcher: null, hostname: null, interfaceIp: null, publicIpv4: null, publicIpv6: null,
    connectionType: 'ssh', connectionPort: 22, username: null, hostKeys: [], attributes: {},
    ...f, ...over,
  } as NodeRecord;
}

const ok = (keys = [EC, ED]): ScanOutcome => ({ ok: true, keys });
const kinds = (actions: RegistrationAction[]): string[] => actions.map((a) => `${a.kind} ${a.hostId}${'count' in a ? ` ${a.count}` : ''}`);

describe('static registration planner', () => {
  it('registers max-parallel-jobs ready records with the scanned keys and the config fields', () => {
    const h = host('192.0.2.10', { maxParallelJobs: 3, labels: ['small', 'big'], username: 'ci' });
    const plan = planRegistration({ provider: 'lab', hosts: [h], records: [], scans: new Map([[h.id, ok()]]) });
    assert.deepEqual(plan.problems, []);
    assert.deepEqual(kinds(plan.actions), ['register 192.0.2.10:22 3']);
    const a = plan.actions[0];
    assert.ok(a?.kind === 'register');
    assert.deepEqual(a.node, {
      state: 'ready', provider: 'lab', pool: 'main', labels: ['small', 'big'], launcher: 'static:lab', hostname: '192.0.2.10',
      interfaceIp: '192.0.2.10', publicIpv4: '192.0.2.10', publicIpv6: null, username: 'ci', connectionType: 'ssh',
      connectionPort: 22, hostKeys: [EC, ED], attributes: {}, pythonPath: 'auto', shellType: null,
    });
    assert.deepEqual(a.slots, [0, 1, 2]);
  });

  it('counts records in any state, so in-use and deleting slots are not registered twice', () => {
    const h = host('h1', { maxParallelJobs: 3 });
    const records = [record(h, { state: 'in-use' }), record(h, { state: 'deleting' }), record(h)];
    const plan = planRegistration({ provider: 'lab', hosts: [h], records, scans: new Map([[h.id, ok()]]) });
    assert.deepEqual(plan.actions, []);
  });

  it('deregisters the excess among ready unallocated records only', () => {
    const h = host('h1', { maxParallelJobs: 1 });
    const inUse = record(h, { state: 'in-use' });
    const allocated = record(h, { allocatedTo: '100-0000000001' });
    const free1 = record(h);
    const free2 = record(h);
    const gone = record(h, { state: 'deleting' });
    const plan = planRegistration({ provider: 'lab', hosts: [h], records: [inUse, allocated, free1, free2, gone], scans: new Map([[h.id, ok()]]) });
    assert.deepEqual(kinds(plan.actions), ['deregister h1:22 3']);
    const d = plan.actions[0];
    assert.ok(d?.kind === 'deregister');
    assert.deepEqual(new Set(d.candidates), new Set([free1.id, free2.id]));
  });

  it('refuses a host whose configured key was not scanned, naming expected and scanned types, and takes back its ready records', () => {
    const h = host('h1', { hostKey: [ED2], maxParallelJobs: 2 });
    const free = record(h);
    const busy = record(h, { state: 'in-use' });
    const plan = planRegistration({ provider: 'lab', hosts: [h], records: [free, busy], scans: new Map([[h.id, ok()]]) });
    assert.equal(plan.problems.length, 1);
    assert.equal(plan.problems[0]?.kind, 'host-key');
    assert.equal(plan.problems[0]?.message, "h1:22: host key mismatch: expected ssh-ed25519, scanned ecdsa-sha2-nistp256, ssh-ed25519 (the host's ssh-ed25519 key differs); not registered");
    assert.deepEqual(plan.actions, [{ kind: 'deregister', hostId: 'h1:22', count: 1, candidates: [free.id], reason: plan.problems[0]?.message }]);
  });

  it('registers when every configured key is among the scanned ones', () => {
    const h = host('h1', { hostKey: [ED, EC] });
    const plan = planRegistration({ provider: 'lab', hosts: [h], records: [], scans: new Map([[h.id, ok()]]) });
    assert.deepEqual(kinds(plan.actions), ['register h1:22 1']);
  });

  it('takes back the ready records of an unreachable host and registers nothing', () => {
    const h = host('h1', { maxParallelJobs: 2 });
    const plan = planRegistration({ provider: 'lab', hosts: [h], records: [record(h), record(h)], scans: new Map([[h.id, { ok: false, reason: 'connection refused' }]]) });
    assert.equal(plan.problems[0]?.kind, 'unreachable');
    assert.match(plan.problems[0]?.message ?? '', /^h1:22: unreachable, not registered: connection refused$/);
    assert.deepEqual(kinds(plan.actions), ['deregister h1:22 2']);
  });

  it('updates ready records whose labels, user, keys or pool drifted from the config', () => {
    const old = host('h1');
    const stale = record(old, { labels: ['big'], username: 'root', hostKeys: [ED] });
    const busy = record(old, { state: 'in-use', labels: ['big'] });
    const now = host('h1', { maxParallelJobs: 2 }, 'other');
    const plan = planRegistration({ provider: 'lab', hosts: [now], records: [stale, busy], scans: new Map([[now.id, ok()]]) });
    assert.deepEqual(plan.actions, [{ kind: 'update', hostId: 'h1:22', nodeId: stale.id, patch: { pool: 'other', labels: ['small'], username: 'zuul', hostKeys: [EC, ED] } }]);
  });

  it('winrm hosts register with no keys and ignore host-key', () => {
    const h = host('win1', { connectionType: 'winrm', connectionPort: 5986, hostKey: [ED] });
    const plan = planRegistration({ provider: 'lab', hosts: [h], records: [], scans: new Map([[h.id, ok([])]]) });
    assert.deepEqual(plan.problems, []);
    const a = plan.actions[0];
    assert.ok(a?.kind === 'register');
    assert.deepEqual([a.node.hostKeys, a.node.connectionPort, a.node.connectionType], [[], 5986, 'winrm']);
  });

  it('deregisters ready records of hosts no longer configured, leaving in-use ones, and keeps ports apart', () => {
    const kept = host('h1');
    const removed = host('h1', { connectionPort: 2222 });
    const records = [record(kept), record(removed), record(removed, { state: 'in-use' })];
    const plan = planRegistration({ provider: 'lab', hosts: [kept], records, scans: new Map([[kept.id, ok()]]) });
    assert.deepEqual(plan.actions, [{ kind: 'deregister', hostId: 'h1:2222', count: 1, candidates: [records[1]?.id], reason: 'h1:2222: no longer configured' }]);
  });

  it('leaves a host without a scan outcome alone', () => {
    const h = host('h1', { maxParallelJobs: 2 });
    assert.deepEqual(planRegistration({ provider: 'lab', hosts: [h], records: [], scans: new Map() }), { actions: [], problems: [] });
  });

  it('registers missing records in the free slots only, and gives a ready record without a valid slot a free one', () => {
    const h = host('h1', { maxParallelJobs: 4 });
    const busy = record(h, { state: 'in-use', slot: 1 });
    const legacy = record(h, { slot: null });
    const clash = record(h, { slot: 1 });
    const plan = planRegistration({ provider: 'lab', hosts: [h], records: [busy, legacy, clash], scans: new Map([[h.id, ok()]]) });
    assert.deepEqual(plan.actions, [
      { kind: 'register', hostId: 'h1:22', count: 1, node: registrationFields('lab', h, [EC, ED]), slots: [0] },
      { kind: 'update', hostId: 'h1:22', nodeId: clash.id, patch: { slot: 3 } },
      { kind: 'update', hostId: 'h1:22', nodeId: legacy.id, patch: { slot: 2 } },
    ]);
    assert.deepEqual(freeSlots([{ slot: 0 }, { slot: 2 }, { slot: null }], 4, 2), [1, 3]);
  });

  it('with host-key-checking off takes the configured keys without scanning, and updates python-path and shell-type', () => {
    const h = host('h1', { hostKeyChecking: false, hostKey: [ED2], pythonPath: '/usr/bin/python3', shellType: 'sh' });
    assert.equal(skipsScan(h), true);
    assert.equal(skipsScan(host('w1', { hostKeyChecking: false, connectionType: 'winrm' })), false, 'a winrm host is still connected to');
    assert.deepEqual(acceptScan(h, ok([ED2])), { ok: true, keys: [ED2] });
    const old = record(host('h1'));
    const plan = planRegistration({ provider: 'lab', hosts: [h], records: [old], scans: new Map([[h.id, ok([ED2])]]) });
    assert.deepEqual(plan.actions, [{ kind: 'update', hostId: 'h1:22', nodeId: old.id, patch: { hostKeys: [ED2], pythonPath: '/usr/bin/python3', shellType: 'sh' } }]);
  });
});
