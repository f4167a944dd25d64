/**
 * Nodepool 11's component registry as the ZooKeeper store writes it, read back raw from a real
 * ZooKeeper (Debian's 3.8): the paths (`/nodepool/components/<kind>/<short hostname><10-digit
 * sequence>`, ephemeral, owned by the store session), the JSON (sorted keys, `model_api` 0),
 * pool components following the launcher registrations and updates, and everything made anew
 * after the session expired for real and a new one registered again.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import { componentVersion } from '../../../lib/store/components.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { ReadCounter, ZkClient } from '../../../lib/store/zookeeper/zk-client.js';
import { runningProcesses } from '../../support/processes.js';
import { expireSession, FreezeProxy, startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

let zk: ZooKeeperHandle;
let proxy: FreezeProxy;
let raw: ZkClient;

before(async () => {
  zk = await startZooKeeper();
  proxy = await FreezeProxy.start(zk.port);
  raw = await ZkClient.connect({ hosts: zk.connectString, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
});

after(async () => {
  await raw.close();
  await proxy.close();
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

/** One component znode read raw: its name, its JSON text and the session that owns it. */
interface RawComponent { name: string; text: string; owner: string }

const VERSION = componentVersion();
const SEQ_NAME = (host: string): RegExp => new RegExp(`^${host}\\d{10}$`);

void describe('Nodepool 11 component registry in ZooKeeper', () => {
  let chroot: string;
  let store: ZooKeeperStore;

  beforeEach(async () => {
    chroot = `/components-${randomUUID().slice(0, 8)}`;
    store = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: proxy.port, chroot }] });
  });
  afterEach(() => store.close());

  async function components(kind: string): Promise<RawComponent[]> {
    const dir = `${chroot}/nodepool/components/${kind}`;
    const out: RawComponent[] = [];
    for (const name of (await raw.getChildren(dir) ?? []).sort()) {
      const got = await raw.getData(`${dir}/${name}`);
      if (got) out.push({ name, text: got.data.toString('utf8'), owner: got.stat.ephemeralOwner.toString('hex') });
    }
    return out;
  }

  const session = (hostname = 'nl01.example.org') => store.openSession({ owner: 'nodepool-server', hostname, pid: 7, ttlMs: 10_000 });

  it('writes one pool component per launcher registration with exactly Nodepool 11\'s JSON, owned by the session', async () => {
    const s = await session();
    const id = 'nl01.example.org-7-PoolWorker.static-a-main';
    await store.registerLauncher({ id, sessionId: s.id, provider: 'static-a', pool: 'main', supportedLabels: ['small', 'large'] });
    const [pool, ...more] = await components('pool');
    assert.equal(more.length, 0);
    assert.match(pool?.name ?? '', SEQ_NAME('nl01'));
    assert.equal(pool?.owner, s.id, 'ephemeral, owned by the store session');
    assert.equal(pool?.text, JSON.stringify({
      hostname: 'nl01', id, kind: 'pool', model_api: 0, name: 'main', paused: false, priority: 100, provider_name: 'static-a',
      state: 'running', supported_labels: ['small', 'large'], version: VERSION,
    }));
    // Keep /nodepool/launchers for Nodepool 3.x readers, with the same id and labels.
    const legacy = await raw.getData(`${chroot}/nodepool/launchers/${id}`);
    assert.deepEqual(JSON.parse(legacy?.data.toString() ?? '{}').supported_labels, ['small', 'large']);

    // A refresh rewrites the same znode; an update (paused, priority, labels) too.
    await store.registerLauncher({ id, sessionId: s.id, provider: 'static-a', pool: 'main', supportedLabels: ['small'] });
    await store.updateLauncher(id, { paused: true, priority: 20 });
    const [after1, ...more1] = await components('pool');
    assert.equal(more1.length, 0);
    assert.equal(after1?.name, pool?.name, 'the same znode, rewritten');
    assert.deepEqual(JSON.parse(after1?.text ?? '{}'), {
      hostname: 'nl01', id, kind: 'pool', model_api: 0, name: 'main', paused: true, priority: 20, provider_name: 'static-a',
      state: 'running', supported_labels: ['small'], version: VERSION,
    });
    assert.deepEqual((await store.listLaunchers()).map((l) => [l.id, l.paused, l.priority]), [[id, true, 20]]);

    await store.unregisterLauncher(id);
    assert.deepEqual(await components('pool'), []);
  });

  it('keeps exactly the launcher and builder components published, with model_api 0 and sorted keys', async () => {
    const s = await session();
    await store.publishComponents(s.id, 'launcher', [{ hostname: 'nl01.example.org', state: 'running' }]);
    await store.publishComponents(s.id, 'builder', [{ hostname: 'nb01.example.org', state: 'running' }, { hostname: 'nb02', state: 'running' }]);
    const [launcher, ...moreLaunchers] = await components('launcher');
    assert.equal(moreLaunchers.length, 0);
    assert.match(launcher?.name ?? '', SEQ_NAME('nl01'));
    assert.equal(launcher?.owner, s.id);
    assert.equal(launcher?.text, JSON.stringify({ hostname: 'nl01', kind: 'launcher', model_api: 0, state: 'running', version: VERSION }));
    const builders = await components('builder');
    assert.deepEqual(builders.map((b) => b.name.replace(/\d{10}$/, '')), ['nb01', 'nb02']);
    assert.deepEqual(builders.map((b) => b.text), ['nb01', 'nb02'].map((h) => JSON.stringify({ hostname: h, kind: 'builder', model_api: 0, state: 'running', version: VERSION })));

    // Publishing again changes only what differs: nb02 stays (same znode), nb01 goes.
    await store.publishComponents(s.id, 'builder', [{ hostname: 'nb02', state: 'running' }]);
    assert.deepEqual((await components('builder')).map((b) => b.name), [builders[1]?.name]);
    assert.deepEqual((await components('launcher')).map((l) => l.name), [launcher?.name]);
    assert.deepEqual((await store.listComponents('builder')).map((c) => c.data.hostname), ['nb02']);
  });

  it('loses every component with an expired session, and a new session registers them again with new sequences', async () => {
    const first = await session();
    const id = 'nl01-7-PoolWorker.static-a-main';
    await store.registerLauncher({ id, sessionId: first.id, provider: 'static-a', pool: 'main', supportedLabels: ['small'], priority: 5 });
    await store.publishComponents(first.id, 'launcher', [{ hostname: 'nl01', state: 'running' }]);
    const before = [...await components('pool'), ...await components('launcher')];
    assert.equal(before.length, 2);

    const creds = store.sessionCredentials(first.id);
    assert.ok(creds);
    await expireSession({ serverPort: zk.port, proxy, ...creds });
    await waitFor(async () => !await store.isSessionLive(first.id), { timeoutMs: 10_000, what: 'the session to be seen expired', intervalMs: 5 });
    assert.deepEqual([...await components('pool'), ...await components('launcher')], [], 'ephemeral: gone with the session');

    // What a daemon does after replacing its session: the pool worker's next registration and the server's next publish.
    const second = await session();
    await store.registerLauncher({ id, sessionId: second.id, provider: 'static-a', pool: 'main', supportedLabels: ['small'], priority: 5 });
    await store.publishComponents(second.id, 'launcher', [{ hostname: 'nl01', state: 'running' }]);
    const again = [...await components('pool'), ...await components('launcher')];
    assert.equal(again.length, 2);
    for (const c of again) assert.equal(c.owner, second.id);
    assert.ok(again.every((c) => !before.some((b) => b.name === c.name)), 'new sequence numbers');
    assert.equal(JSON.parse(again[0]?.text ?? '{}').priority, 5);
  });

  it('moves a launcher id registered by another process to this one, leaving one pool component', async () => {
    const other = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: proxy.port, chroot }] });
    try {
      const theirs = await other.openSession({ owner: 'nodepool-server', hostname: 'nl02', pid: 8, ttlMs: 10_000 });
      const id = 'shared-PoolWorker.static-a-main';
      await other.registerLauncher({ id, sessionId: theirs.id, provider: 'static-a', pool: 'main', supportedLabels: ['small'] });
      const ours = await session();
      await store.registerLauncher({ id, sessionId: ours.id, provider: 'static-a', pool: 'main', supportedLabels: ['small'] });
      const pools = await components('pool');
      assert.deepEqual(pools.map((p) => [p.name.replace(/\d{10}$/, ''), p.owner]), [['nl01', ours.id]]);
    } finally {
      await other.close();
    }
  });
});
