/**
 * A static pool is not wedged by a request it can never serve (issue 20 §8): real sshd hosts on
 * loopback, nodepool-server in this process (SQLite store), consumers through the client library.
 * - A `reuse: false` request is never taken by a static pool (it stays `requested`, unlocked,
 *   for a provider that can launch), and later requests are served meanwhile.
 * - A request the pool took and paused on (its only host is in use) that is deleted meanwhile
 *   drops its handler: later requests for other labels are served.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../../../lib/lifecycle.js';
import { requestLock } from '../../../../lib/store/lock-names.js';
import type { NodepoolServer } from '../../../../server/main.js';
import { LauncherSystem } from '../../../support/launcher-system.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';
import { stopAllProcesses } from '../../../support/processes.js';

void describe('launcher: a static pool is not wedged by requests it cannot serve', () => {
  let small: SshdHandle;
  let big: SshdHandle;
  let sys: LauncherSystem;
  let server: NodepoolServer;

  before(async () => {
    [small, big] = await Promise.all([startSshd(), startSshd()]);
    const node = (h: SshdHandle, label: string): Record<string, unknown> => ({
      name: h.host, 'connection-port': h.port, labels: [label], 'host-key': h.hostKey('ed25519'), timeout: 10,
    });
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }, { name: 'big' }],
      providers: [{ name: 'hosts', driver: 'static', pools: [{ name: 'main', nodes: [node(small, 'small'), node(big, 'big')] }] }],
    });
    server = await sys.startServer();
    await sys.waitForNodes('2 ready static nodes', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 30_000);
  });
  after(async () => {
    await sys?.stop();
    for (const s of [small, big]) await s?.stop();
    await stopAllProcesses();
  });

  /** Resolves once the pool worker has run `n` more passes (each lists the requests again). */
  const passes = async (n: number): Promise<void> => {
    const count = (): number => server.launcher.loopHealth().find((l) => l.name.startsWith('pool-worker:hosts/'))?.passes ?? 0;
    const from = count();
    await waitFor(() => count() >= from + n, { timeoutMs: 20_000, what: `${n} pool worker passes`, intervalMs: 20 });
  };

  it('never takes a reuse: false request and goes on serving others', async () => {
    const client = await sys.client();
    const noReuse = await client.request(['small'], { reuse: false });
    await passes(5);
    const still = await sys.store.getRequest(noReuse.id);
    assert.equal(still?.state, 'requested', 'the reuse: false request is left requested');
    assert.deepEqual(still?.declinedBy, [], 'and not declined (a provider that launches may take it)');
    assert.equal(await sys.store.getLock(requestLock(noReuse.id)), undefined, 'and not locked');
    const [node] = await client.requestNodes(['small'], { timeoutMs: 20_000 });
    assert.equal(node?.state, 'in-use', 'a later request is served');
    await client.release(node.id);
    await sys.store.deleteRequest(noReuse.id);
    await sys.waitForNodes('the small host back in stock', (ns) => ns.some((n) => n.labels.includes('small') && n.state === 'ready'), 20_000);
  });

  it('drops a paused handler whose request was deleted, and serves later requests', async () => {
    const holder = await sys.client('holder');
    const [busy] = await holder.requestNodes(['big'], { timeoutMs: 20_000 });
    assert.ok(busy, 'the only big host is in use');
    const client = await sys.client();
    const waiting = await client.request(['big']);
    await sys.waitForRequest(waiting.id, ['pending'], 20_000);
    await passes(2);
    assert.equal((await sys.store.getRequest(waiting.id))?.state, 'pending', 'the pool waits for a big host');
    await sys.store.deleteRequest(waiting.id);
    const [node] = await client.requestNodes(['small'], { timeoutMs: 20_000 });
    assert.equal(node?.state, 'in-use', 'a later request for another label is served');
    assert.equal(await sys.store.getLock(requestLock(waiting.id)), undefined, 'the deleted request is not locked any more');
    await client.release(node.id);
    await holder.release(busy.id);
  });
});
