/**
 * Nodepool 11 `tenant-resource-limits` on real parts: nodepool-server in this process on a
 * SQLite store and on a ZooKeeper store, a static pool of two real sshd hosts, and tenant `a`'s held cloud nodes of
 * another provider seeded into the store (their `resources` count across providers). A
 * request of tenant `a` (at its max-servers) is deferred: left requested, undeclined and
 * unlocked; a request of tenant `b` is served meanwhile, its node carrying the tenant and
 * requestor; once one of `a`'s nodes is gone, `a`'s request is served.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../../lib/config/load.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import { requestListView } from '../../../../lib/status/list-views.js';
import { requestLock } from '../../../../lib/store/lock-names.js';
import type { NodepoolServer } from '../../../../server/main.js';
import { LauncherSystem } from '../../../support/launcher-system.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';
import { stopAllProcesses } from '../../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../../support/zookeeper.js';

for (const backend of ['sqlite', 'zookeeper'] as const) {
void describe(`launcher: tenant-resource-limits (${backend} store)`, () => {
  let hosts: SshdHandle[];
  let zk: ZooKeeperHandle | undefined;
  let sys: LauncherSystem;
  let server: NodepoolServer;

  before(async () => {
    hosts = await Promise.all([startSshd(), startSshd()]);
    if (backend === 'zookeeper') zk = await startZooKeeper();
    const store = zk ? { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: `/tenant-${randomUUID().slice(0, 8)}` }], 'zookeeper-timeout': 5 } : {};
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }],
      providers: [{
        name: 'hosts', driver: 'static',
        pools: [{ name: 'main', nodes: hosts.map((h) => ({ name: h.host, 'connection-port': h.port, labels: ['small'], 'host-key': h.hostKey('ed25519'), timeout: 10 })) }],
      }],
      extra: { ...store, 'tenant-resource-limits': [{ 'tenant-name': 'a', 'max-servers': 2, 'max-cores': 100 }, { 'tenant-name': 'b', 'max-servers': 5 }] },
    });
    server = await sys.startServer();
    await sys.waitForNodes('2 ready static nodes', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 30_000);
  });
  after(async () => {
    await sys?.stop();
    for (const h of hosts ?? []) await h.stop();
    await zk?.stop();
    await stopAllProcesses();
  });

  /** Resolves once the pool worker has run `n` more passes (each lists the requests again). */
  const passes = async (n: number): Promise<void> => {
    const count = (): number => server.launcher.loopHealth().find((l) => l.name.startsWith('pool-worker:hosts/'))?.passes ?? 0;
    const from = count();
    await waitFor(() => count() >= from + n, { timeoutMs: 20_000, what: `${n} pool worker passes`, intervalMs: 20 });
  };

  it('defers a request of a tenant at its limit while serving another tenant, and serves it once there is room', async () => {
    // Tenant a holds two cloud servers in a provider this launcher does not run: at its max-servers.
    const cloudNode = () => sys.store.createNode({
      state: 'hold', provider: 'elsewhere', pool: 'main', labels: ['big'], tenantName: 'a', resources: { cores: 4, ram: 8192, instances: 1 },
    });
    const [first] = [await cloudNode(), await cloudNode()];
    assert.ok(first);

    const forA = await sys.store.createRequest({ labels: ['small'], requestor: 'zuul-scheduler', tenantName: 'a' });
    await passes(5);
    const deferred = await sys.store.getRequest(forA.id);
    assert.deepEqual([deferred?.state, deferred?.declinedBy, deferred?.nodes], ['requested', [], []], 'deferred, not declined');
    assert.equal(await sys.store.getLock(requestLock(forA.id)), undefined, 'and not locked');
    // request-list (the CLI's and the web's view) says why it waits: the pool defers tenant a at its limit.
    const config = loadConfig(sys.configPath);
    const waitingFor = async (id: string): Promise<Array<{ reason: string; detail: string }>> => {
      const json = (await requestListView({ store: sys.store, config: () => config, clock: Date.now })).json as Array<{ id: string; waitReasons?: Array<{ reason: string; detail: string }> }>;
      return json.find((r) => r.id === id)?.waitReasons ?? [];
    };
    await waitFor(async () => (await waitingFor(forA.id)).some((r) => r.reason === 'tenant-limit'), { timeoutMs: 20_000, what: 'request-list naming the tenant limit', intervalMs: 100 });
    assert.match((await waitingFor(forA.id))[0]?.detail ?? '', /^tenant a: instances: 2 of 2 used, the request needs 1$/);

    const forB = await sys.store.createRequest({ labels: ['small'], requestor: 'zuul-scheduler', tenantName: 'b' });
    const servedB = await sys.waitForRequest(forB.id, ['fulfilled'], 20_000);
    const nodeB = await sys.store.getNode(servedB.nodes[0] ?? '');
    assert.deepEqual([nodeB?.provider, nodeB?.tenantName, nodeB?.requestor], ['hosts', 'b', 'zuul-scheduler'], 'the node carries its request tenant and requestor');
    assert.equal((await sys.store.getRequest(forA.id))?.state, 'requested', 'a is still deferred while b was served');

    await sys.store.deleteNode(first.id);
    const servedA = await sys.waitForRequest(forA.id, ['fulfilled'], 20_000);
    const nodeA = await sys.store.getNode(servedA.nodes[0] ?? '');
    assert.deepEqual([nodeA?.tenantName, nodeA?.resources], ['a', null], 'served once the tenant has room; a static node takes no resources');
    await waitFor(async () => (await sys.store.listLaunchers()).every((l) => !l.standing?.tenantLimited), { timeoutMs: 20_000, what: 'the tenant gone from the pool\'s standing', intervalMs: 100 });
  });
});
}
