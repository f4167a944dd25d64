/**
 * The launcher with the static driver, end to end: real sshd hosts on loopback, nodepool-server
 * (in this process, or as processes sharing one store), consumers through the client library,
 * `nodepool delete --now` through the CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import type { NodeRecord } from '../../../lib/store/models.js';
import { startCli } from '../cli/cli-env.js';
import type { NodepoolServer } from '../../../server/main.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { startSshd, type SshdHandle } from '../../support/sshd.js';
import { stopAllProcesses } from '../../support/processes.js';

function staticProvider(name: string, hosts: Array<{ sshd: SshdHandle; labels: string[]; jobs?: number }>): Record<string, unknown> {
  return {
    name, driver: 'static',
    pools: [{
      name: 'main',
      nodes: hosts.map((h) => ({
        name: h.sshd.host, 'connection-port': h.sshd.port, labels: h.labels, 'host-key': h.sshd.hostKey('ed25519'),
        // A generous probe timeout: a loaded CI machine took over 2 s to answer a key scan, and
        // the host's ready node was deregistered under the delete --now test.
        'max-parallel-jobs': h.jobs ?? 1, timeout: 10,
      })),
    }],
  };
}

void describe('launcher: static provider in nodepool-server', () => {
  let a: SshdHandle;
  let b: SshdHandle;
  let c: SshdHandle;
  let sys: LauncherSystem;

  before(async () => {
    [a, b, c] = await Promise.all([startSshd(), startSshd(), startSshd()]);
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }, { name: 'big' }, { name: 'other' }],
      providers: [
        staticProvider('hosts', [{ sshd: a, labels: ['small'] }, { sshd: b, labels: ['small'] }, { sshd: c, labels: ['big'] }]),
        staticProvider('others', []),
      ],
    });
    await sys.startServer();
    await sys.waitForNodes('3 ready static nodes', (ns) => ns.filter((n) => n.state === 'ready').length === 3, 30_000);
  });
  after(async () => {
    await sys?.stop();
    for (const s of [a, b, c]) await s?.stop();
    await stopAllProcesses();
  });

  it('fulfils a request from a registered host and gives the host back as a new ready node on release', async () => {
    const client = await sys.client();
    const [node] = await client.requestNodes(['small'], { timeoutMs: 20_000 });
    assert.ok(node);
    assert.equal(node.state, 'in-use');
    assert.equal(node.provider, 'hosts');
    assert.ok([a.port, b.port].includes(node.connectionPort));
    assert.deepEqual(node.hostKeys.includes(a.hostKey('ed25519')) || node.hostKeys.includes(b.hostKey('ed25519')), true);
    assert.equal((await sys.store.listRequests()).length, 0, 'the accepted request is gone');
    await client.release(node.id);
    const back = await sys.waitForNodes('the host back in stock', (ns) =>
      !ns.some((n) => n.id === node.id) && ns.some((n) => n.state === 'ready' && n.connectionPort === node.connectionPort), 20_000);
    assert.equal(back.filter((n) => n.connectionPort === node.connectionPort).length, 1);
  });

  it('delete --now removes a ready static node at once and registers its slot again', async () => {
    const [node] = (await sys.store.listNodes({ provider: 'hosts', states: ['ready'] })).filter((n) => n.allocatedTo === null);
    assert.ok(node);
    const sameHost = (ns: NodeRecord[]) => ns.filter((n) => n.hostname === node.hostname && n.connectionPort === node.connectionPort);
    const before = sameHost(await sys.store.listNodes({ provider: 'hosts' })).length;
    const r = await startCli(sys.configPath, ['delete', node.id, '--now']).result;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`Node ${node.id} deleted`));
    const after = sameHost(await sys.store.listNodes({ provider: 'hosts' }));
    assert.equal(await sys.store.getNode(node.id), undefined, 'the record is gone when the command returns');
    assert.equal(after.length, before, 'a fresh record took its slot, no more');
    assert.ok(after.every((n) => n.id !== node.id) && after.some((n) => n.state === 'ready'));
  });

  it('fulfils a two-label request from one pool, nodes in label order', async () => {
    const client = await sys.client();
    const nodes = await client.requestNodes(['big', 'small'], { timeoutMs: 20_000 });
    assert.deepEqual(nodes.map((n) => n.labels[0]), ['big', 'small']);
    assert.equal(nodes[0]?.connectionPort, c.port);
    for (const n of nodes) await client.release(n.id);
    await sys.waitForNodes('3 ready nodes again', (ns) => ns.filter((n) => n.state === 'ready').length === 3, 20_000);
  });

  it('fails a request no launcher can serve, with the reason', async () => {
    const client = await sys.client();
    const req = await client.request(['gpu']);
    const done = await sys.waitForRequest(req.id, ['failed'], 20_000);
    assert.match(done.reason ?? '', /node type\(s\) \[gpu\] not available/);
    assert.equal(done.declinedBy.length, 2, 'both pools declined');
  });

  it('deregisters a host whose sshd stopped and serves the request from another host', async () => {
    await a.pause();
    try {
      const client = await sys.client();
      for (let i = 0; i < 2; i++) {
        const [n] = await client.requestNodes(['small'], { timeoutMs: 30_000 });
        assert.equal(n?.connectionPort, b.port, 'served by the host that answers');
        await client.release(n.id);
      }
      await waitFor(async () => !(await sys.store.listNodes({ states: ['ready'] })).some((n) => n.connectionPort === a.port),
        { timeoutMs: 20_000, what: "the stopped host's node deregistered" });
    } finally {
      await a.restart();
    }
    await sys.waitForNodes('the host registered again once back', (ns) => ns.some((n) => n.state === 'ready' && n.connectionPort === a.port), 30_000);
  });

  it('applies a max-parallel-jobs change on reload, and stops the pool of a removed provider', async () => {
    await sys.rewrite((p) => ({
      ...p,
      providers: [
        staticProvider('hosts', [{ sshd: a, labels: ['small'] }, { sshd: b, labels: ['small'], jobs: 3 }, { sshd: c, labels: ['big'] }]),
        staticProvider('others', []),
      ],
    }));
    await sys.waitForNodes('3 slots for host b', (ns) => ns.filter((n) => n.state === 'ready' && n.connectionPort === b.port).length === 3, 20_000);
    await sys.rewrite((p) => ({ ...p, providers: [staticProvider('others', [])] }));
    await waitFor(async () => !(await sys.store.listLaunchers()).some((l) => l.provider === 'hosts'),
      { timeoutMs: 20_000, what: "the removed provider's launcher to go" });
    const client = await sys.client();
    const req = await client.request(['small']);
    const done = await sys.waitForRequest(req.id, ['failed'], 20_000);
    assert.match(done.reason ?? '', /not available/);
  });
});

void describe('launcher: providers split across two servers sharing one store', () => {
  let x: SshdHandle;
  let y: SshdHandle;
  let sys: LauncherSystem;

  before(async () => {
    [x, y] = await Promise.all([startSshd(), startSshd()]);
    sys = await LauncherSystem.create({
      labels: [{ name: 'lx' }, { name: 'ly' }],
      providers: [staticProvider('px', [{ sshd: x, labels: ['lx'] }]), staticProvider('py', [{ sshd: y, labels: ['ly'] }])],
    });
    sys.startServerProcess('server-x', ['px']);
    sys.startServerProcess('server-y', ['py']);
    await waitFor(async () => (await sys.store.listLaunchers()).length === 2, { timeoutMs: 30_000, what: 'both launchers registered' });
    await sys.waitForNodes('one ready node per provider', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 30_000);
  });
  after(async () => {
    await sys?.stop();
    for (const s of [x, y]) await s?.stop();
    await stopAllProcesses();
  });

  it('each server serves its own provider; the other declines; a label neither serves fails', async () => {
    const nodes = await sys.store.listNodes();
    assert.deepEqual(nodes.map((n) => n.provider).sort(), ['px', 'py'], 'each server registered only its provider');
    const client = await sys.client();
    const [nx] = await client.requestNodes(['lx'], { timeoutMs: 20_000 });
    const [ny] = await client.requestNodes(['ly'], { timeoutMs: 20_000 });
    assert.equal(nx?.provider, 'px');
    assert.equal(ny?.provider, 'py');
    for (const n of [nx, ny]) if (n) await client.release(n.id);
    await sys.waitForNodes('both slots back', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 20_000);
    const both = await client.requestNodes(['ly', 'lx'], { timeoutMs: 20_000 });
    assert.deepEqual(both.map((n) => n.provider), ['py', 'px'], 'a nodeset across the two servers, in label order');
    const req = await client.request(['lz']);
    const failed = await sys.waitForRequest(req.id, ['failed'], 20_000);
    assert.equal(failed.declinedBy.length, 2);
    assert.ok(failed.declinedBy.some((l) => l.startsWith('server-x-')) && failed.declinedBy.some((l) => l.startsWith('server-y-')));
  });
});

void describe('launcher: max-ready-age and max-hold-age', () => {
  let h: SshdHandle;
  let sys: LauncherSystem;

  before(async () => {
    h = await startSshd();
    sys = await LauncherSystem.create({
      labels: [{ name: 'aged', 'max-ready-age': 2 }, { name: 'held' }],
      providers: [staticProvider('ages', [{ sshd: h, labels: ['aged', 'held'], jobs: 2 }])],
      extra: { 'max-hold-age': 2 },
    });
    await sys.startServer();
    await sys.waitForNodes('2 ready slots', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 30_000);
  });
  after(async () => {
    await sys?.stop();
    await h?.stop();
    await stopAllProcesses();
  });

  it('deletes ready nodes older than max-ready-age (a static slot comes back as a new node)', async () => {
    const first = (await sys.store.listNodes({ states: ['ready'] })).map((n) => n.id);
    const later = await sys.waitForNodes('both slots replaced by younger nodes', (ns) => {
      const ready = ns.filter((n) => n.state === 'ready');
      return ready.length === 2 && ready.every((n) => !first.includes(n.id));
    }, 30_000);
    assert.ok(later.every((n) => n.connectionPort === h.port));
  });

  it('deletes held nodes after max-hold-age, and keeps an in-use node meanwhile', async () => {
    const client = await sys.client();
    const [held, used] = await client.requestNodes(['held', 'held'], { timeoutMs: 20_000 });
    await client.hold(held!.id, { reason: 'debugging' });
    await waitFor(async () => (await sys.store.getNode(held!.id)) === undefined, { timeoutMs: 20_000, what: 'the held node to expire and be deleted' });
    assert.equal((await sys.store.getNode(used!.id))?.state, 'in-use', 'the in-use node is untouched');
    await client.release(used!.id);
  });
});

void describe('launcher: a new request wakes an idle pool worker', () => {
  let s: SshdHandle;
  let sys: LauncherSystem;
  let server: NodepoolServer;

  before(async () => {
    s = await startSshd();
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }],
      providers: [staticProvider('hosts', [{ sshd: s, labels: ['small'] }])],
      launcher: { interval: 30 },
    });
    server = await sys.startServer();
    await sys.waitForNodes('a ready static node', (ns) => ns.some((n) => n.state === 'ready'), 30_000);
  });
  after(async () => {
    await sys?.stop();
    await s?.stop();
    await stopAllProcesses();
  });

  it('serves a request from another store handle long before the 30 s interval', async () => {
    // The worker is idle: between passes, and no pass started since the last look (a pass that
    // found work is followed at once by another).
    const poolLoop = () => server.loopHealth().find((l) => l.name.startsWith('pool-worker:'));
    let seen = -1;
    const idle = await waitFor(() => {
      const h = poolLoop();
      const quiet = h !== undefined && h.passes > 0 && h.runningSince === null && h.passes === seen;
      seen = h?.passes ?? -1;
      return quiet ? h : undefined;
    }, { timeoutMs: 10_000, what: 'the pool worker to wait out its interval', intervalMs: 200 });
    const client = await sys.client();
    const [node] = await client.requestNodes(['small'], { timeoutMs: 25_000, pollIntervalMs: 20 });
    assert.ok(node);
    // Without the wake-up its next pass would start 30 s after the last one ended.
    const servedAfter = Date.now() - (idle.lastPass ?? 0);
    assert.ok(servedAfter < 15_000, `served ${servedAfter} ms after the idle worker's last pass, with an interval of 30 s`);
    assert.ok((poolLoop()?.passes ?? 0) > idle.passes, 'a pass ran for the request');
    await client.release(node.id);
  });
});
