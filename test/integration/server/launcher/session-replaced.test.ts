/**
 * A request handler outlives a store session (issue 20 §7): nodepool-server (in this process)
 * on a real ZooKeeper, through a freeze proxy, with a static pool of real sshd hosts. The
 * server's handler of a request waits (paused) for the only `big` host, which a consumer holds;
 * ZooKeeper then expires the server's session for real, and the server replaces it. The
 * resumed handler must take its locks again under the new session and fulfil the request once
 * the host is back — not lock with the dead session, decline, and fail a request that only this
 * launcher serves.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../../../lib/lifecycle.js';
import { nodeLock, requestLock } from '../../../../lib/store/lock-names.js';
import type { ZooKeeperStore } from '../../../../lib/store/zookeeper/zookeeper-store.js';
import type { NodepoolServer } from '../../../../server/main.js';
import { LauncherSystem } from '../../../support/launcher-system.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';
import { runningProcesses, stopAllProcesses } from '../../../support/processes.js';
import { expireSession, FreezeProxy, startZooKeeper, type ZooKeeperHandle } from '../../../support/zookeeper.js';

void describe('launcher: a request handler after the store session is replaced', () => {
  let zk: ZooKeeperHandle;
  let proxy: FreezeProxy;
  let big: SshdHandle;
  let sys: LauncherSystem;
  let server: NodepoolServer;

  before(async () => {
    zk = await startZooKeeper();
    proxy = await FreezeProxy.start(zk.port);
    big = await startSshd();
    sys = await LauncherSystem.create({
      labels: [{ name: 'big' }],
      providers: [{
        name: 'hosts', driver: 'static',
        pools: [{ name: 'main', nodes: [{ name: big.host, 'connection-port': big.port, labels: ['big'], 'host-key': big.hostKey('ed25519'), timeout: 10 }] }],
      }],
      extra: { 'zookeeper-servers': [{ host: '127.0.0.1', port: proxy.port, chroot: '/replaced' }] },
      launcher: { 'session-ttl': 3 },
    });
    server = await sys.startServer();
    await sys.waitForNodes('the ready static node', (ns) => ns.some((n) => n.state === 'ready'), 30_000);
  });
  after(async () => {
    await sys?.stop();
    await big?.stop();
    await proxy?.close();
    await zk?.stop();
    await stopAllProcesses();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('takes its locks again under the new session and fulfils the request', async () => {
    const holder = await sys.client('holder');
    const [busy] = await holder.requestNodes(['big'], { timeoutMs: 20_000 });
    assert.ok(busy, 'the only big host is in use');
    const client = await sys.client('waiter');
    const waiting = await client.request(['big']);
    await sys.waitForRequest(waiting.id, ['pending'], 20_000);
    const old = server.session.id;
    assert.equal((await sys.store.getLock(requestLock(waiting.id)))?.sessionId, old, 'the server holds the request under its session');

    const creds = (server.store as ZooKeeperStore).sessionCredentials(old);
    assert.ok(creds, 'the server session was opened by this store handle');
    await expireSession({ serverPort: zk.port, proxy, ...creds });
    const fresh = await waitFor(() => (server.session.id !== old ? server.session.id : undefined), {
      timeoutMs: 15_000, what: 'the server to replace its expired session', intervalMs: 20,
    });
    // The resumed handler holds the request again under the new session (the old one's lock
    // went with it), and the request is still pending: not declined or failed. (The cleanup
    // worker may have reset it meanwhile; a new handler then takes it under the new session.)
    await waitFor(async () => (await sys.store.getLock(requestLock(waiting.id)))?.sessionId === fresh
      && (await sys.store.getRequest(waiting.id))?.state === 'pending', {
      timeoutMs: 15_000, what: 'the request pending and locked under the new session', intervalMs: 50,
    });

    await holder.release(busy.id);
    const done = await sys.waitForRequest(waiting.id, ['fulfilled', 'failed'], 30_000);
    assert.equal(done.state, 'fulfilled', `the request is fulfilled (${done.reason ?? ''})`);
    const [nodeId] = done.nodes;
    assert.ok(nodeId);
    assert.equal(await sys.store.getLock(nodeLock(nodeId)), undefined, 'its node is unlocked for the consumer');
    const accepted = await client.accept(done);
    assert.equal(accepted[0]?.state, 'in-use');
    await client.release(nodeId);
  });
});
