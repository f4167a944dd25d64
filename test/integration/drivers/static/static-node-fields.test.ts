/**
 * Nodepool 11's static node keys against real sshd processes on loopback: every record
 * carries python-path, shell-type, username, the connection, the pool's node-attributes and
 * its slot (0…max-parallel-jobs−1, a freed slot registered again under its own number);
 * `host-key-checking: false` registers the configured keys without connecting and hands a
 * node out without a liveness check, where checking on refuses the same host.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { StaticProvider } from '../../../../lib/drivers/static/provider.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { runningProcesses } from '../../../support/processes.js';
import type { SshdHandle } from '../../../support/sshd.js';
import { FOREIGN_KEY, StaticEnv, type TestHost } from './static-env.js';

describe('static node fields (Nodepool 11 keys)', () => {
  let env: StaticEnv;

  beforeEach(async () => {
    env = await StaticEnv.create();
  });
  afterEach(async () => {
    await env.close();
    assert.deepEqual(runningProcesses().map((p) => p.name), [], 'no process left running');
  });

  const sshd = (host: string): Promise<SshdHandle> => env.sshd(host);

  const provider = async (hosts: TestHost[]): Promise<StaticProvider> => (await env.provider(hosts)).p;

  const nodes = (states?: NodeRecord['state'][]) => env.store.listNodes({ provider: 'lab', ...(states ? { states } : {}) });

  it('gives every record python-path, shell-type, username, connection, attributes and its own slot; a freed slot comes back under its number', async () => {
    const s = await sshd('127.0.0.11');
    const p = await provider([{
      name: s.host, port: s.port, maxParallelJobs: 3,
      extra: { 'python-path': '/usr/bin/python3', 'shell-type': 'sh', username: 'ci', 'connection-type': 'network_cli' },
    }]);
    const ready = await nodes(['ready']);
    assert.deepEqual(ready.map((r) => r.slot).sort(), [0, 1, 2]);
    for (const r of ready) {
      assert.deepEqual(
        [r.pythonPath, r.shellType, r.username, r.connectionType, r.connectionPort, r.hostKeys, r.attributes],
        ['/usr/bin/python3', 'sh', 'ci', 'network_cli', s.port, [...s.hostKeys], { rack: 'r1' }],
      );
    }
    const middle = ready.find((r) => r.slot === 1);
    assert.ok(middle);
    await env.store.updateNode(middle.id, { state: 'used' });
    await p.cleanupNode(middle);
    await env.store.deleteNode(middle.id);
    await p.nodeDeleted(middle);
    const after = await nodes(['ready']);
    const fresh = after.find((r) => !ready.some((o) => o.id === r.id));
    assert.equal(fresh?.slot, 1, 'the fresh record takes the freed slot');
    assert.deepEqual(after.map((r) => r.slot).sort(), [0, 1, 2]);
  });

  it('defaults python-path to auto and leaves shell-type unset', async () => {
    const s = await sshd('127.0.0.12');
    await provider([{ name: s.host, port: s.port }]);
    const [r] = await nodes(['ready']);
    assert.deepEqual([r?.pythonPath, r?.shellType, r?.username, r?.slot], ['auto', null, 'zuul', 0]);
  });

  it('with host-key-checking off registers the configured keys without connecting and hands nodes out without a liveness check', async () => {
    const s = await sshd('127.0.0.13');
    await s.pause(); // nothing listens: a scan or a liveness connect would fail
    const checked = await provider([{ name: s.host, port: s.port, timeout: 1, hostKey: [FOREIGN_KEY] }]);
    assert.deepEqual(await nodes(), [], 'checking on: an unreachable host is not registered');
    await checked.stop();

    const p = await provider([{ name: s.host, port: s.port, timeout: 1, maxParallelJobs: 2, hostKey: [FOREIGN_KEY], extra: { 'host-key-checking': false } }]);
    const ready = await nodes(['ready']);
    assert.equal(ready.length, 2);
    for (const r of ready) assert.deepEqual(r.hostKeys, [FOREIGN_KEY]);
    const handler = p.getRequestHandler('main', await env.store.createRequest({ labels: ['small'], requestor: 'test' }));
    assert.equal(await handler.checkReusableNode(ready[0] as NodeRecord), true, 'assumed live, as Nodepool does');
    await p.cleanupLeakedResources();
    assert.equal((await nodes(['ready'])).length, 2, 'the cleanup pass keeps them registered');

    await s.restart();
    await p.cleanupLeakedResources();
    assert.deepEqual((await nodes(['ready']))[0]?.hostKeys, [FOREIGN_KEY], 'the configured key stands, not the scanned ones');
    assert.equal(s.readLog().split('\n').filter((l) => /\[preauth\]|kex_exchange_identification/.test(l)).length, 0, 'sshd saw no connection');
  });
});
