import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { finishLaunchFault, LaunchFaultSystem } from '../support/launch-fault-system.js';
import { useNovaCloud, type NovaCloud } from '../support/openstack-full.js';
import { runningProcesses } from '../support/processes.js';

describe('faults: Nova answers 500s', () => {
  let nova: NovaCloud;
  let sys: LaunchFaultSystem | undefined;

  before(async () => {
    nova = await useNovaCloud();
  });
  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it('Nova answers 500 to server create: the launch is retried to a ready node and no server is left behind', async () => {
    sys = await LaunchFaultSystem.start(nova);
    sys.startServer();
    const readyBefore = await sys.reachSteady();
    // launch-retries is 3: two refused creates leave the third attempt to succeed.
    sys.proxy.arm({ call: 'create', kind: 'fail', times: 2 });
    const req = await sys.requestVictim();
    await sys.launcher.waitForRequest(req.id, ['fulfilled', 'failed'], 90_000);
    const t0 = Math.min(...sys.proxy.calls.filter((c) => c.call === 'create' && c.outcome === 'injected').map((c) => c.at));
    await finishLaunchFault(sys, { scenario: 'Nova answers 500 to server create', faultAt: t0, before: readyBefore, requests: [req.id], runs: 2 });
    assert.equal(sys.proxy.injected('create'), 2, 'both injected 500s were met');
  });

  it('Nova creates a server but answers 500: the retry boots another, and the leak check deletes the first', async () => {
    sys = await LaunchFaultSystem.start(nova);
    sys.startServer();
    const readyBefore = await sys.reachSteady();
    sys.proxy.arm({ call: 'create', kind: 'fail-after-nova', times: 1 });
    const req = await sys.requestVictim();
    await sys.launcher.waitForRequest(req.id, ['fulfilled', 'failed'], 90_000);
    const t0 = Math.min(...sys.proxy.calls.filter((c) => c.call === 'create' && c.outcome === 'injected').map((c) => c.at));
    await finishLaunchFault(sys, { scenario: 'Nova creates a server but answers 500', faultAt: t0, before: readyBefore, requests: [req.id], runs: 1 });
    assert.equal(sys.proxy.injected('create'), 1);
  });

  it('Nova answers 500 to server delete: the deleter retries until the server is gone, then drops the record', async () => {
    sys = await LaunchFaultSystem.start(nova);
    sys.startServer();
    const readyBefore = await sys.reachSteady();
    const client = await sys.consumer();
    const req = await sys.requestVictim();
    const done = await sys.launcher.waitForRequest(req.id, ['fulfilled'], 90_000);
    const [node] = await client.accept(done);
    assert.ok(node?.externalId);
    sys.proxy.arm({ call: 'delete', kind: 'fail', times: 3 });
    const t0 = Date.now();
    await client.release(node.id);
    await finishLaunchFault(sys, { scenario: 'Nova answers 500 to server delete', faultAt: t0, before: readyBefore, requests: [], runs: 3 });
    assert.equal(sys.proxy.injected('delete'), 3, 'every injected 500 was met');
    assert.equal(await sys.launcher.store.getNode(node.id), undefined, 'the released node is gone');
    assert.ok(!(await sys.servers()).some((s) => s.id === node.externalId), 'and so is its server');
  });
});
