import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import type { NodeRecord, NodeRequestRecord } from '../../../lib/store/models.js';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv, NODES_TEST_CONFIG, type CliEnv } from './cli-env.js';

function tableRows(text: string): string[][] {
  return text.split('\n').filter((l) => l.startsWith('|')).slice(1).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

describe('nodepool request and request-list', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function setup(): Promise<CliEnv> {
    const env = await createCliEnv(NODES_TEST_CONFIG);
    releasers.add('cli env', () => env.close());
    return env;
  }

  /** The CLI's request, once it exists. */
  function cliRequest(env: CliEnv): Promise<NodeRequestRecord> {
    return waitFor(async () => (await env.store.listRequests({ requestor: 'nodepool request' }))[0], { timeoutMs: 20_000, what: "the CLI's request" });
  }

  it('without --wait creates a request that outlives the command and prints its id', async () => {
    const env = await setup();
    const r = await env.run('request', 'small', 'large', '--priority', '50', '--provider', 'cloud-a');
    assert.equal(r.code, 0, r.stderr);
    const id = r.stdout.trim();
    assert.match(id, /^050-\d{10}$/);
    const stored = await env.store.getRequest(id);
    assert.deepEqual([stored?.state, stored?.labels, stored?.provider, stored?.requestorSession, stored?.requestor],
      ['requested', ['small', 'large'], 'cloud-a', null, 'nodepool request']);
    const j = await env.run('request', 'small', '--json');
    assert.equal(j.code, 0, j.stderr);
    assert.equal((JSON.parse(j.stdout) as NodeRequestRecord).priority, 100);
  });

  it('refuses a label the config does not define (exit 3) and a bad priority (exit 2)', async () => {
    const env = await setup();
    const r = await env.run('request', 'small', 'tiny', 'huge');
    assert.equal(r.code, 3);
    assert.match(r.stderr, /Labels tiny, huge not defined in .*nodepool\.yaml/);
    const p = await env.run('request', 'small', '--priority', '1000');
    assert.equal(p.code, 2);
    assert.deepEqual(await env.store.listRequests(), []);
  });

  it('--wait takes the nodes of the fulfilled request in use, prints them and deletes the request', async () => {
    const env = await setup();
    const cli = env.start(['request', 'large', 'small', '--wait', '--timeout', '30']);
    const r = await cliRequest(env);
    assert.ok(r.requestorSession, 'ephemeral: tied to the CLI session');
    // Play the launcher once the CLI has shown the request waiting (ci30 fulfilled it before the CLI's first look).
    await cli.waitForOutput(new RegExp(`request ${r.id}: requested\\n`), 'the request waiting');
    await env.store.updateRequest(r.id, { state: 'pending' }, { expectStates: ['requested'] });
    const nodes: NodeRecord[] = [];
    for (const label of r.labels) {
      nodes.push(await env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: [label], allocatedTo: r.id, externalId: `srv-${label}` }));
    }
    await env.store.updateRequest(r.id, { state: 'fulfilled', nodes: nodes.map((n) => n.id) }, { expectStates: ['pending'] });
    const done = await cli.result;
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(tableRows(done.stdout).map((c) => [c[0], c[2], c[3], c[6]]),
      [[nodes[0]!.id, 'large', 'srv-large', 'in-use'], [nodes[1]!.id, 'small', 'srv-small', 'in-use']]);
    assert.match(done.stderr, new RegExp(`request ${r.id}: requested\\n[\\s\\S]*request ${r.id}: fulfilled\\n`));
    for (const n of nodes) {
      const now = await env.store.getNode(n.id);
      assert.deepEqual([now?.state, now?.consumerSession], ['in-use', null]);
    }
    assert.equal(await env.store.getRequest(r.id), undefined);
  });

  it('--wait exits 1 with the reason when the request fails, and deletes it', async () => {
    const env = await setup();
    const cli = env.start(['request', 'gpu', '--wait', '--timeout', '30']);
    const r = await cliRequest(env);
    await env.store.updateRequest(r.id, { state: 'failed', reason: 'node type(s) [gpu] not available', declinedBy: ['np1-1-PoolWorker.cloud-a-main'] });
    const done = await cli.result;
    assert.equal(done.code, 1);
    assert.match(done.stderr, new RegExp(`Node request ${r.id} failed: node type\\(s\\) \\[gpu\\] not available`));
    assert.equal(await env.store.getRequest(r.id), undefined);
  });

  it('--wait exits 1 when the timeout passes, and 130 on SIGINT; the request is gone either way', async () => {
    const env = await setup();
    const t = await env.run('request', 'small', '--wait', '--timeout', '1');
    assert.equal(t.code, 1);
    assert.match(t.stderr, /still requested after 1 s; the request was deleted/);
    assert.deepEqual(await env.store.listRequests(), []);
    const cli = env.start(['request', 'small', '--wait']);
    await cliRequest(env);
    cli.proc.child.kill('SIGINT');
    const done = await cli.result;
    assert.equal(done.code, 130, done.stderr);
    assert.match(done.stderr, /Interrupted; the request was deleted/);
    assert.deepEqual(await env.store.listRequests(), []);
  });

  it('request-list shows requests by priority, then age, with their nodes and decliners', async () => {
    const env = await setup();
    const a = await env.store.createRequest({ labels: ['small'], requestor: 'zuul' });
    const b = await env.store.createRequest({ labels: ['large', 'small'], requestor: 'zuul', priority: 50 });
    await env.store.updateRequest(a.id, { state: 'pending', declinedBy: ['np1-1-PoolWorker.static-1-hosts'] });
    await env.store.updateRequest(b.id, { state: 'fulfilled', nodes: ['0000000001', '0000000002'] });
    const r = await env.run('request-list');
    assert.equal(r.code, 0, r.stderr);
    const rows = tableRows(r.stdout);
    assert.deepEqual(rows.map((c) => c.slice(0, 7)), [
      [b.id, '50', 'fulfilled', 'zuul', 'large,small', '0000000001,0000000002', ''],
      [a.id, '100', 'pending', 'zuul', 'small', '', 'np1-1-PoolWorker.static-1-hosts'],
    ]);
    for (const c of rows) assert.match(c[7] as string, /^00:00:00:\d\d$/);
    const j = await env.run('request-list', '--json');
    assert.deepEqual((JSON.parse(j.stdout) as Array<NodeRequestRecord & { age: number }>).map((x) => [x.id, x.state, typeof x.age]),
      [[b.id, 'fulfilled', 'number'], [a.id, 'pending', 'number']]);
  });
});
