import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadCloud } from '../../../lib/drivers/openstack/clouds-yaml.js';
import { OpenStackImageService } from '../../../lib/drivers/openstack/glance-image-service.js';
import { Releasers } from '../../../lib/lifecycle.js';
import type { NodeRecord } from '../../../lib/store/models.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { useLoopbackCloud } from '../../support/openstack.js';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv, NODES_TEST_CONFIG, type CliEnv } from './cli-env.js';

const HOUR = 3_600_000;

/** The cells of a table's body rows. */
function tableRows(text: string): string[][] {
  const lines = text.split('\n').filter((l) => l.startsWith('|'));
  return lines.slice(1).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

function tableHeader(text: string): string[] {
  return (text.split('\n').find((l) => l.startsWith('|')) ?? '').split('|').slice(1, -1).map((c) => c.trim());
}

describe('nodepool list, hold, release, delete, label-list, info, erase', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function setup(): Promise<{ env: CliEnv; old: Store }> {
    const env = await createCliEnv(NODES_TEST_CONFIG);
    releasers.add('cli env', () => env.close());
    // Records written through a store whose clock runs two hours behind have a known age.
    const old = await openStore(env.config, { clock: () => Date.now() - 2 * HOUR });
    releasers.add('old store', () => old.close());
    return { env, old };
  }

  /** ready (cloud), in-use (cloud, locked by another live session), building, static ready with two labels. */
  async function sampleNodes(env: CliEnv, old: Store): Promise<NodeRecord[]> {
    const ready = await old.createNode({
      state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], externalId: 'srv-1', publicIpv4: '203.0.113.1',
      publicIpv6: '2001:db8::1', privateIpv4: '10.0.0.1', hostname: 'np0000000001', az: 'nova', launcher: 'np1-1-PoolWorker.cloud-a-main',
    });
    const inUse = await old.createNode({ state: 'in-use', provider: 'cloud-a', pool: 'main', labels: ['large'], externalId: 'srv-2', allocatedTo: '100-0000000001' });
    const building = await old.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['small'], externalId: 'srv-3' });
    const host = await old.createNode({ state: 'ready', provider: 'static-1', pool: 'hosts', labels: ['small', 'large'], hostname: 'host1.example.org', connectionPort: 2222 });
    const other = await env.store.openSession({ owner: 'zuul', hostname: 'zuul1', pid: 1, ttlMs: 600_000 });
    assert.equal(await env.store.tryLock(`node:${inUse.id}`, other.id), true);
    return [ready, inUse, building, host];
  }

  it('list shows every node with its state, age and lock; --detail adds where it lives and who holds it', async () => {
    const { env, old } = await setup();
    await sampleNodes(env, old);
    const r = await env.run('list');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(tableHeader(r.stdout), ['ID', 'Provider', 'Label', 'Server ID', 'Public IPv4', 'IPv6', 'State', 'Age', 'Locked']);
    const rows = tableRows(r.stdout);
    assert.deepEqual(rows.map((c) => [...c.slice(0, 7), c[8]]), [
      ['0000000001', 'cloud-a', 'small', 'srv-1', '203.0.113.1', '2001:db8::1', 'ready', 'unlocked'],
      ['0000000002', 'cloud-a', 'large', 'srv-2', '', '', 'in-use', 'locked'],
      ['0000000003', 'cloud-a', 'small', 'srv-3', '', '', 'building', 'unlocked'],
      ['0000000004', 'static-1', 'small,large', '', '', '', 'ready', 'unlocked'],
    ]);
    for (const c of rows) assert.match(c[7] as string, /^00:02:00:\d\d$/);
    const d = await env.run('list', '--detail');
    assert.equal(d.code, 0, d.stderr);
    assert.equal(tableHeader(d.stdout).length, 18);
    const detail = tableRows(d.stdout);
    assert.deepEqual(detail[0]?.slice(9), ['main', 'np0000000001', '10.0.0.1', 'nova', '22', 'np1-1-PoolWorker.cloud-a-main', '', '', '']);
    assert.deepEqual(detail[1]?.slice(9, 16), ['main', '', '', '', '22', '', '100-0000000001']);
    assert.deepEqual(detail[3]?.slice(9, 11), ['hosts', 'host1.example.org']);
  });

  it('list --json prints the records with locked and age', async () => {
    const { env, old } = await setup();
    const made = await sampleNodes(env, old);
    const r = await env.run('list', '--json');
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as Array<NodeRecord & { locked: boolean; age: number }>;
    assert.deepEqual(doc.map((n) => [n.id, n.state, n.locked]), made.map((n) => [n.id, n.state, n.id === '0000000002']));
    assert.ok(doc.every((n) => n.age >= 7200 && n.age < 7300));
    assert.deepEqual(doc[3]?.labels, ['small', 'large']);
    assert.equal(doc[3]?.connectionPort, 2222);
  });

  it('list shows a lock of a lapsed session as unlocked', async () => {
    const { env, old } = await setup();
    const n = await old.createNode({ state: 'in-use', provider: 'cloud-a', pool: 'main', labels: ['small'] });
    // Opened two hours ago (the old store's clock) with a 1 s TTL: lapsed long since.
    const gone = await old.openSession({ owner: 'zuul', hostname: 'zuul1', pid: 1, ttlMs: 1000 });
    await old.tryLock(`node:${n.id}`, gone.id);
    const r = await env.run('list');
    assert.equal(tableRows(r.stdout)[0]?.[8], 'unlocked');
  });

  it('hold sets state hold with its reason and expiry; release then makes it used', async () => {
    const { env, old } = await setup();
    const [ready] = await sampleNodes(env, old);
    const h = await env.run('hold', ready!.id, '--reason', 'debug job 42', '--expire', '7200');
    assert.equal(h.code, 0, h.stderr);
    const heldRow = tableRows(h.stdout)[0];
    assert.deepEqual([heldRow?.[6], heldRow?.[16]], ['hold', 'debug job 42']);
    assert.match(heldRow?.[17] as string, /^00:0[12]:\d\d:\d\d$/);
    const held = await env.store.getNode(ready!.id);
    assert.equal(held?.state, 'hold');
    assert.ok(held?.holdExpiration !== null && Math.abs((held?.holdExpiration ?? 0) - (Date.now() + 2 * HOUR)) < 60_000);
    const rel = await env.run('release', ready!.id);
    assert.equal(rel.code, 0, rel.stderr);
    assert.equal(tableRows(rel.stdout)[0]?.[6], 'used');
    assert.equal((await env.store.getNode(ready!.id))?.state, 'used');
  });

  it('hold and release refuse nodes in the wrong state (exit 1) and unknown nodes (exit 3)', async () => {
    const { env, old } = await setup();
    const [, , building] = await sampleNodes(env, old);
    const h = await env.run('hold', building!.id);
    assert.equal(h.code, 1);
    assert.match(h.stderr, /node 0000000003 is building; only ready, in-use, hold nodes can be held/);
    const rel = await env.run('release', building!.id);
    assert.equal(rel.code, 1);
    assert.match(rel.stderr, /is building/);
    assert.equal((await env.store.getNode(building!.id))?.state, 'building');
    for (const cmd of ['hold', 'release', 'delete']) {
      const r = await env.run(cmd, '0000009999');
      assert.equal(r.code, 3, `${cmd}: ${r.stderr}`);
      assert.match(r.stderr, /Node 0000009999 not found/);
    }
  });

  it('delete marks a node deleting and unlocks it; a node locked by a live session is refused after 5 s', async () => {
    const { env, old } = await setup();
    const [ready, inUse] = await sampleNodes(env, old);
    const d = await env.run('delete', ready!.id);
    assert.equal(d.code, 0, d.stderr);
    assert.deepEqual([tableRows(d.stdout)[0]?.[0], tableRows(d.stdout)[0]?.[6], tableRows(d.stdout)[0]?.[8]], [ready!.id, 'deleting', 'unlocked']);
    assert.equal((await env.store.getNode(ready!.id))?.state, 'deleting');
    assert.equal((await env.store.getLock(`node:${ready!.id}`))?.live ?? false, false);
    const started = Date.now();
    const locked = await env.run('delete', inUse!.id, '--json');
    assert.equal(locked.code, 1);
    assert.ok(Date.now() - started >= 5000, 'waits up to 5 s for the lock');
    assert.match(locked.stderr, /Node 0000000002 is locked by another session/);
    assert.equal((await env.store.getNode(inUse!.id))?.state, 'in-use');
  });

  it('delete --now refuses a node whose provider is not in the config (exit 3) and leaves it alone', async () => {
    const { env, old } = await setup();
    const gone = await old.createNode({ state: 'used', provider: 'old-cloud', pool: 'p', labels: ['small'], externalId: 'srv-9' });
    const r = await env.run('delete', gone.id, '--now');
    assert.equal(r.code, 3);
    assert.match(r.stderr, /Provider old-cloud of node 0000000001 not found in .*nodepool\.yaml/);
    assert.equal((await env.store.getNode(gone.id))?.state, 'used');
  });

  it('label-list counts ready, allocated, in-use and building nodes per label and names unserved labels', async () => {
    const { env, old } = await setup();
    await sampleNodes(env, old);
    await old.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], allocatedTo: '100-0000000007' });
    const r = await env.run('label-list');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(tableHeader(r.stdout), ['Label', 'Min Ready', 'Ready', 'Allocated', 'In Use', 'Building', 'Providers']);
    assert.deepEqual(tableRows(r.stdout), [
      ['small', '2', '2', '1', '0', '1', 'cloud-a/main,static-1/hosts'],
      ['large', '0', '1', '0', '1', '0', 'cloud-a/main'],
      ['gpu', '0', '0', '0', '0', '0', ''],
    ]);
    assert.match(r.stdout, /\ngpu: no provider pool serves it; requests for it fail\n$/);
    const j = await env.run('label-list', '--json');
    assert.deepEqual((JSON.parse(j.stdout) as Array<{ label: string; ready: number }>).map((s) => [s.label, s.ready]), [['small', 2], ['large', 1], ['gpu', 0]]);
  });

  it("info shows a provider's image builds and nodes, also for a provider no longer configured; unknown → 3", async () => {
    const { env, old } = await setup();
    await sampleNodes(env, old);
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await env.store.createUpload({ buildId: b.id, provider: 'old-cloud', imageName: 'ubuntu-jammy', externalName: null });
    await env.store.createNode({ state: 'used', provider: 'old-cloud', pool: 'p', labels: ['small'], externalId: 'srv-old' });
    const r = await env.run('info', 'old-cloud');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^State data for provider old-cloud \(not in .*nodepool\.yaml\)\nImage builds:\n/);
    const [images, nodes] = r.stdout.split('Nodes:\n') as [string, string];
    assert.deepEqual(tableRows(images), [['ubuntu-jammy', 'ubuntu-jammy-0000000001']]);
    assert.deepEqual(tableRows(nodes), [['0000000005', 'srv-old', 'used']]);
    const a = await env.run('info', 'cloud-a', '--json');
    assert.equal(a.code, 0, a.stderr);
    const doc = JSON.parse(a.stdout) as { configured: boolean; images: unknown[]; nodes: NodeRecord[] };
    assert.equal(doc.configured, true);
    assert.deepEqual(doc.nodes.map((n) => n.id), ['0000000001', '0000000002', '0000000003']);
    const u = await env.run('info', 'nowhere');
    assert.equal(u.code, 3);
    assert.match(u.stderr, /Provider nowhere not found/);
  });

  it("erase --force removes only that provider's upload and node records; without --force and no TTY it refuses", async () => {
    const { env, old } = await setup();
    await sampleNodes(env, old);
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await env.store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: null });
    const keptUpload = await env.store.createUpload({ buildId: b.id, provider: 'cloud-b', imageName: 'ubuntu-jammy', externalName: null });
    const refused = await env.run('erase', 'cloud-a');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /Aborting\. No data erased\./);
    assert.equal((await env.store.listNodes({ provider: 'cloud-a' })).length, 3);
    const r = await env.run('erase', 'cloud-a', '--force');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Erased state for provider cloud-a: 1 upload record\(s\), 3 node record\(s\)\. Cloud servers and images were not deleted\./);
    assert.deepEqual(await env.store.listNodes({ provider: 'cloud-a' }), []);
    assert.deepEqual((await env.store.listNodes()).map((n) => n.provider), ['static-1']);
    assert.deepEqual((await env.store.listUploads()).map((u) => u.id), [keptUpload.id]);
    assert.ok(await env.store.getBuild(b.id), 'builds are not touched');
    const unknown = await env.run('erase', 'nowhere', '--force');
    assert.equal(unknown.code, 3);
  });

  it('alien-image-list names an unknown provider (exit 3) and lists nothing for a provider that does not manage images', async () => {
    const { env } = await setup();
    const u = await env.run('alien-image-list', 'nowhere');
    assert.equal(u.code, 3);
    assert.match(u.stderr, /Provider nowhere not found/);
    const s = await env.run('alien-image-list', 'static-1', '--json');
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stderr, /Provider static-1 does not manage images/);
    assert.deepEqual(JSON.parse(s.stdout), []);
  });

  it('alien-image-list lists tagged images of the cloud that no upload record accounts for', async () => {
    const cloud = await useLoopbackCloud();
    releasers.add('loopback cloud', () => cloud.stop());
    // A provider name of its own: the shared cloud holds other tests' images.
    const provider = `alien-${randomUUID().slice(0, 8)}`;
    const env = await createCliEnv((stateDir) => `
state-dir: ${stateDir}
clouds-file: ${JSON.stringify(cloud.cloudsYamlPath)}
diskimages: [{name: ubuntu-jammy}]
providers:
  - name: ${provider}
    cloud: ${cloud.cloudName}
    diskimages: [{name: ubuntu-jammy}]
`);
    releasers.add('cli env', () => env.close());
    const svc = await OpenStackImageService.create(await loadCloud(cloud.cloudName, { path: cloud.cloudsYamlPath }));
    const file = path.join(env.dir, 'tiny.raw');
    await writeFile(file, Buffer.alloc(65_536));
    const upload = async (name: string, props: Record<string, string>): Promise<string> => {
      const up = await svc.upload({ name, format: 'raw', filePath: file, properties: { nodepool_provider_name: provider, ...props } });
      releasers.add(`image ${name}`, () => svc.delete(up.externalId));
      return up.externalId;
    };
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['raw'] });
    const u = await env.store.createUpload({ buildId: b.id, provider, imageName: 'ubuntu-jammy', externalName: `${provider}-known` });
    const known = await upload(`${provider}-known`, { nodepool_build_id: b.id, nodepool_upload_id: u.id });
    await env.store.updateUpload(u.id, { state: 'ready', externalId: known });
    const alien = await upload(`${provider}-alien`, { nodepool_build_id: b.id, nodepool_upload_id: '0000009999' });
    await upload(`${provider}-operator`, { purpose: 'not ours' });
    const r = await env.run('alien-image-list', '--json');
    assert.equal(r.code, 0, r.stderr);
    // Other test files' images in the shared cloud carry nodepool tags without a provider name,
    // so they are this provider's aliens too while they exist: only this test's own are compared.
    const mine = (JSON.parse(r.stdout) as Array<{ provider: string; name: string; externalId: string }>)
      .filter((a) => a.provider === provider && a.name.startsWith(`${provider}-`));
    assert.deepEqual(mine, [{ provider, name: `${provider}-alien`, externalId: alien }]);
    const t = await env.run('alien-image-list', provider);
    assert.equal(t.code, 0, t.stderr);
    assert.ok(tableRows(t.stdout).some((c) => c[0] === provider && c[1] === `${provider}-alien` && c[2] === alien), t.stdout);
  });
});
