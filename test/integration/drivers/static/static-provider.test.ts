/**
 * The static provider against real sshd processes on loopback: registration with scanned
 * host keys, host key mismatch, a host going down and coming back, returned nodes,
 * max-parallel-jobs changes and host removal through a recreated provider.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { configEquals } from '../../../../lib/config/config-equals.js';
import type { StaticProviderConfig } from '../../../../lib/drivers/static/config.js';
import { staticDriver } from '../../../../lib/drivers/static/index.js';
import { StaticProvider } from '../../../../lib/drivers/static/provider.js';
import type { Provider } from '../../../../lib/drivers/contract/driver.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import { SessionKeeper } from '../../../../lib/client/session-keeper.js';
import { freePort, runningProcesses } from '../../../support/processes.js';
import { testLogger } from '../../../support/test-log.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';
import { FOREIGN_KEY, StaticEnv, type TestHost } from './static-env.js';

describe('static provider', () => {
  let env: StaticEnv;

  beforeEach(async () => {
    env = await StaticEnv.create();
  });
  afterEach(async () => {
    await env.close();
    assert.deepEqual(runningProcesses().map((p) => p.name), [], 'no process left running');
  });

  const sshd = (host: string): Promise<SshdHandle> => env.sshd(host);

  const provider = (hosts: TestHost[]): Promise<{ p: StaticProvider; config: StaticProviderConfig }> => env.provider(hosts);

  const nodes = (states?: NodeRecord['state'][]) => env.store.listNodes({ provider: 'lab', ...(states ? { states } : {}) });
  const ofHost = (rs: NodeRecord[], s: SshdHandle) => rs.filter((r) => r.hostname === s.host && r.connectionPort === s.port);

  /** What the launcher's deleter does with a `deleting` node of a static provider. */
  async function deleteLikeTheLauncher(p: Provider, r: NodeRecord): Promise<void> {
    await p.cleanupNode(r);
    await env.store.deleteNode(r.id);
    await p.nodeDeleted(r);
  }

  it('registers max-parallel-jobs ready records carrying the scanned host keys', async () => {
    const s = await sshd('127.0.0.2');
    const { p } = await provider([{ name: s.host, port: s.port, maxParallelJobs: 2, labels: ['small', 'big'], hostKey: [s.hostKey('ed25519')] }]);
    const ready = await nodes(['ready']);
    assert.equal(ready.length, 2);
    for (const r of ready) {
      assert.deepEqual(r.hostKeys, [...s.hostKeys]);
      assert.deepEqual([r.hostname, r.interfaceIp, r.publicIpv4, r.connectionPort, r.connectionType], [s.host, s.host, s.host, s.port, 'ssh']);
      assert.deepEqual([r.pool, r.labels, r.username, r.launcher, r.attributes, r.allocatedTo], ['main', ['small', 'big'], 'zuul', 'static:lab', { rack: 'r1' }, null]);
    }
    assert.deepEqual((await p.listNodes()).map((n) => [n.externalId, n.name, n.provider, n.status]), [[`${s.host}:${s.port}`, s.host, 'lab', 'registered']]);
    // A second start (another launcher pass with the same config) registers nothing more.
    await provider([{ name: s.host, port: s.port, maxParallelJobs: 2, labels: ['small', 'big'], hostKey: [s.hostKey('ed25519')] }]);
    assert.equal((await nodes()).length, 2);
  });

  it('refuses a host whose key is not the configured one, naming the host, and takes back its ready records', async () => {
    const s = await sshd('127.0.0.3');
    const closed = await freePort();
    await provider([{ name: s.host, port: s.port, maxParallelJobs: 2, hostKey: [s.hostKey('ecdsa')] }]);
    assert.equal((await nodes(['ready'])).length, 2);

    await provider([
      { name: s.host, port: s.port, maxParallelJobs: 2, hostKey: [FOREIGN_KEY] },
      { name: '127.0.0.1', port: closed, timeout: 1 },
    ]);
    const all = await nodes();
    assert.deepEqual(all.map((r) => r.state), ['deleting', 'deleting'], 'nothing registered, the old ready records taken back');
    const errors = env.logged('error');
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.message, `${s.host}:${s.port}: host key mismatch: expected ssh-ed25519, scanned ecdsa-sha2-nistp256, ssh-ed25519 (the host's ssh-ed25519 key differs); not registered`);
    assert.equal(errors[0]?.host, `${s.host}:${s.port}`);
    assert.ok(env.logged('warn').some((l) => l.message.startsWith(`127.0.0.1:${closed}: unreachable, not registered: no SSH connection within 1000 ms (connection refused)`)));
  });

  it('takes a down host out of service and registers it again once it is back', async () => {
    const s = await sshd('127.0.0.4');
    const hosts = [{ name: s.host, port: s.port, maxParallelJobs: 3, timeout: 10 }];
    const { p } = await provider(hosts);
    const [first] = await nodes(['ready']);
    assert.ok(first);
    const handler = p.getRequestHandler('main', await env.store.createRequest({ labels: ['small'], requestor: 'test' }));
    assert.equal(await handler.checkReusableNode(first), true);
    assert.equal(handler.canLaunch, false);
    assert.equal(await handler.hasRemainingQuota('small'), false);

    const keys = [...s.hostKeys];
    await s.pause();
    assert.equal(await handler.checkReusableNode(first), false);
    assert.deepEqual((await nodes()).map((r) => r.state), ['deleting', 'ready', 'ready'], 'one record deregistered by the liveness check');
    assert.match((await env.store.getNode(first.id))?.reason ?? '', /liveness check failed: connection refused/);

    await p.cleanupLeakedResources();
    const gone = await nodes();
    assert.deepEqual(gone.map((r) => r.state), ['deleting', 'deleting', 'deleting'], 'the rest deregistered by the cleanup pass');
    for (const r of gone) await deleteLikeTheLauncher(p, r);
    assert.deepEqual(await nodes(), [], 'a down host gets no fresh records');
    assert.deepEqual(await p.listNodes(), []);

    await s.restart();
    assert.deepEqual(s.hostKeys, keys, 'same keys after restart');
    await p.cleanupLeakedResources();
    const back = await nodes(['ready']);
    assert.equal(back.length, 3);
    assert.deepEqual(back[0]?.hostKeys, keys);
  });

  it('takes locks under the live session after the old one lapsed and was replaced: a down host is deregistered and registered again', async () => {
    const s = await sshd('127.0.0.10');
    const session = await SessionKeeper.open(env.store, { owner: 'static-test', ttlMs: 1000, onLapse: 'replace', log: testLogger() });
    try {
      const { config, provider: pc } = env.config([{ name: s.host, port: s.port, maxParallelJobs: 2, timeout: 10 }]);
      const p = staticDriver.createProvider(pc, env.ctx(config, () => session.id)) as StaticProvider;
      env.track(p);
      await p.start();
      assert.equal((await nodes(['ready'])).length, 2);
      const lapsed = session.id;
      await env.store.closeSession(lapsed); // as another process reaping a lapsed session does
      await waitFor(() => session.id !== lapsed, { timeoutMs: 5000, what: 'the session keeper to replace the lapsed session' });

      await s.pause();
      await p.cleanupLeakedResources();
      assert.deepEqual((await nodes()).map((r) => r.state), ['deleting', 'deleting'], 'deregistered under the new session');
      for (const r of await nodes()) await deleteLikeTheLauncher(p, r);
      await s.restart();
      await p.cleanupLeakedResources();
      assert.equal((await nodes(['ready'])).length, 2, 'registered again');
      assert.deepEqual(env.logged('error').filter((l) => /not live/.test(l.message)), []);
    } finally {
      await session.close();
    }
  });

  it('registers a fresh ready record when a returned node is deleted', async () => {
    const s = await sshd('127.0.0.5');
    const { p } = await provider([{ name: s.host, port: s.port }]);
    const [node] = await nodes(['ready']);
    assert.ok(node);
    await env.store.updateNode(node.id, { state: 'used' });
    await deleteLikeTheLauncher(p, node);
    const fresh = await nodes();
    assert.equal(fresh.length, 1);
    assert.equal(fresh[0]?.state, 'ready');
    assert.notEqual(fresh[0]?.id, node.id);
    assert.deepEqual([fresh[0]?.hostname, fresh[0]?.connectionPort, fresh[0]?.hostKeys], [s.host, s.port, node.hostKeys]);
  });

  it('follows max-parallel-jobs 1 → 3 → 2 through recreated providers', async () => {
    const s = await sshd('127.0.0.6');
    const old = await provider([{ name: s.host, port: s.port, maxParallelJobs: 1 }]);
    assert.equal((await nodes(['ready'])).length, 1);
    const three = await provider([{ name: s.host, port: s.port, maxParallelJobs: 3 }]);
    assert.equal(configEquals(old.config, three.config), false, 'the launcher sees a changed config');
    await old.p.stop();
    assert.equal((await nodes(['ready'])).length, 3);
    await three.p.stop();
    await provider([{ name: s.host, port: s.port, maxParallelJobs: 2 }]);
    assert.equal((await nodes(['ready'])).length, 2);
    assert.equal((await nodes(['deleting'])).length, 1);
  });

  it('deregisters the ready records of a host removed from the config, leaving its in-use node', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const both = await startSshd({ addresses: [`127.0.0.7:${portA}`, `127.0.0.8:${portB}`] });
    env.trackSshd(both);
    const a = { name: '127.0.0.7', port: portA, maxParallelJobs: 2 };
    const b = { name: '127.0.0.8', port: portB, connectionType: 'winrm' };
    const first = await provider([a, b]);
    const [busy] = (await nodes(['ready'])).filter((r) => r.hostname === a.name);
    assert.ok(busy);
    await env.store.updateNode(busy.id, { state: 'in-use' });
    const winrm = (await nodes()).find((r) => r.hostname === b.name);
    assert.deepEqual([winrm?.connectionType, winrm?.hostKeys], ['winrm', []], 'winrm hosts are connected to, not key-scanned');

    await first.p.stop();
    await provider([b]);
    const left = await nodes();
    assert.deepEqual(left.filter((r) => r.hostname === a.name).map((r) => [r.id === busy.id, r.state]).sort(), [[false, 'deleting'], [true, 'in-use']]);
    assert.deepEqual(left.filter((r) => r.hostname === b.name).map((r) => r.state), ['ready']);
    assert.ok(env.logged('info').some((l) => l.message === 'deregistered' && l.host === `${a.name}:${a.port}` && l.reason === `${a.name}:${a.port}: no longer configured`));
    assert.deepEqual(ofHost(left, { host: a.name, port: a.port } as SshdHandle).length, 2);
  });

  it('checks hosts with a TCP connect on the cleanup pass right after start; a later pass key-scans again', async () => {
    const s = await sshd('127.0.0.9');
    const hosts = [{ name: s.host, port: s.port, maxParallelJobs: 2 }];
    // sshd logs a "[preauth]" line for each key exchange (a scan asks for three key types, one
    // connection each) and "kex_exchange_identification" for a bare connect, after the client left.
    const count = (re: RegExp): number => s.readLog().split('\n').filter((l) => re.test(l)).length;
    const logged = (what: string, re: RegExp, atLeast: number): Promise<number> =>
      waitFor(() => { const n = count(re); return n >= atLeast ? n : undefined; }, { timeoutMs: 10_000, what: `sshd to log ${what}`, intervalMs: 20 });
    const { p } = await provider(hosts);
    const scanned = await logged('the start\'s key scan', /\[preauth\]/, 3);

    await p.cleanupLeakedResources();
    await logged('the cleanup pass\'s TCP connect', /kex_exchange_identification/, 1);
    assert.equal(count(/\[preauth\]/), scanned, 'no second key exchange right after start');
    assert.equal(count(/kex_exchange_identification/), 1, 'one TCP connect instead');
    assert.equal((await nodes(['ready'])).length, 2);

    const { config, provider: pc } = env.config(hosts);
    const periodic = new StaticProvider(pc, env.ctx(config), { syncKeyReuseMs: 0 });
    env.track(periodic);
    await periodic.cleanupLeakedResources();
    await logged('a key exchange of the later pass', /\[preauth\]/, scanned + 1);
    assert.equal((await nodes()).length, 2, 'nothing registered twice');
  });

  it('refills a returned slot without connecting when its host answered moments ago; with answerReuseMs 0 it connects', async () => {
    const s = await sshd('127.0.0.11');
    const hosts = [{ name: s.host, port: s.port, maxParallelJobs: 2 }];
    const connects = (): number => s.readLog().split('\n').filter((l) => /kex_exchange_identification/.test(l)).length;
    const connected = (atLeast: number): Promise<number> =>
      waitFor(() => (connects() >= atLeast ? connects() : undefined), { timeoutMs: 10_000, what: `sshd to log ${atLeast} bare connect(s)`, intervalMs: 20 });
    const returnOne = async (p: StaticProvider): Promise<void> => {
      const [node] = await nodes(['ready']);
      assert.ok(node);
      const handler = p.getRequestHandler('main', await env.store.createRequest({ labels: ['small'], requestor: 'test' }));
      assert.equal(await handler.checkReusableNode(node), true, 'the hand-out check connects and the host answers');
      await env.store.updateNode(node.id, { state: 'used' });
      await deleteLikeTheLauncher(p, node);
      assert.equal((await nodes(['ready'])).length, 2, 'the slot is registered again');
    };
    const { p } = await provider(hosts);
    await returnOne(p);
    await connected(1);
    await new Promise((r) => setTimeout(r, 300)); // sshd logs a connect once the client has left
    assert.equal(connects(), 1, 'the refill reused the hand-out check\'s answer: no second connect');

    const { config, provider: pc } = env.config(hosts);
    const strict = new StaticProvider(pc, env.ctx(config), { answerReuseMs: 0 });
    env.track(strict);
    await strict.start();
    await returnOne(strict);
    await connected(3);
  });
});
