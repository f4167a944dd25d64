/**
 * Fault: one cloud fails every launch (issue 35 §3), on the run's loopback Nova. Two openstack
 * providers in one nodepool-server process: A boots through a NovaFaultProxy (its creates
 * answered 500 while the fault is armed), B straight. Both serve `small`; `only-a` and `only-b`
 * one each. B's pace alone is taken first (`only-b` requests, one after another); then A fails:
 * after `failures` failed launches A's breaker opens (published in the store); a request only A
 * serves waits, its reason `breaker-open` in request-list; every `small` request is served by B
 * at B's pace (figures, not asserted: the fault report has them) and A sees no create while the
 * breaker holds; once the fault is gone, the probe after the backoff serves the waiting request
 * and the breaker closes. Nothing lost: every request fulfilled; nothing leaked: every server
 * of either provider in Nova is a node's once they settle.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import yaml from 'js-yaml';
import type { NodepoolClient } from '../../lib/client/nodepool-client.js';
import { loadConfig } from '../../lib/config/load.js';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../lib/drivers/openstack/keystone.js';
import { NovaClient } from '../../lib/drivers/openstack/nova.js';
import { waitFor } from '../../lib/lifecycle.js';
import { requestListView } from '../../lib/status/list-views.js';
import type { NodeRecord } from '../../lib/store/models.js';
import { recordFault } from '../support/fault-report.js';
import { LauncherSystem } from '../support/launcher-system.js';
import { NovaFaultProxy } from '../support/nova-fault-proxy.js';
import { useNovaCloud, type NovaCloud } from '../support/openstack-full.js';
import { runningProcesses } from '../support/processes.js';

/** Long enough that the reason is read and B's pace taken while the breaker holds (under load a failed probe only doubles it). */
const BACKOFF_S = 45;
/** Requests per pace measurement (one after another). */
const PACE_REQUESTS = 4;

describe('faults: a cloud that fails every launch (the circuit breaker)', () => {
  let nova: NovaCloud;
  let dir: string;
  let proxy: NovaFaultProxy;
  let sys: LauncherSystem;
  let client: NodepoolClient;
  let direct: NovaClient;
  let session: KeystoneSession;
  const tag = randomBytes(3).toString('hex');
  const [providerA, providerB] = [`brk-a-${tag}`, `brk-b-${tag}`];

  before(async () => {
    nova = await useNovaCloud();
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-breaker-'));
    proxy = await NovaFaultProxy.start(nova, dir);
    // One clouds.yaml: cloud `a` through the proxy, `b` straight to the same Nova.
    type Clouds = { clouds: Record<string, unknown> };
    const proxied = yaml.load(await readFile(proxy.cloudsYamlPath, 'utf8')) as Clouds;
    const straight = yaml.load(await readFile(nova.cloudsFile, 'utf8')) as Clouds;
    const cloudsFile = path.join(dir, 'clouds.yaml');
    await writeFile(cloudsFile, yaml.dump({ clouds: { a: proxied.clouds[nova.cloud], b: straight.clouds[nova.cloud] } }), { mode: 0o600 });
    const label = (name: string): Record<string, unknown> => ({ name, 'cloud-image': nova.image.name, 'flavor-name': 'm1.tiny' });
    const provider = (name: string, cloud: string, only: string): Record<string, unknown> => ({
      name, driver: 'openstack', cloud, 'region-name': nova.region, 'launch-timeout': 60, 'launch-retries': 1,
      'cloud-images': [{ name: nova.image.name, username: 'cirros' }],
      pools: [{ name: 'main', networks: [nova.network.name], 'host-key-checking': false, 'max-servers': 10, labels: [label('small'), label(only)] }],
    });
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }, { name: 'only-a' }, { name: 'only-b' }],
      providers: [provider(providerA, 'a', 'only-a'), provider(providerB, 'b', 'only-b')],
      extra: { 'clouds-file': cloudsFile },
      launcher: { breaker: { failures: 2, backoff: BACKOFF_S, 'max-backoff': 60, 'probe-timeout': 60 } },
    });
    sys.startServerProcess('server');
    client = await sys.client('breaker-fault');
    session = await KeystoneSession.authenticate(await loadCloud(nova.cloud, { path: nova.cloudsFile }));
    direct = new NovaClient(session);
  });

  after(async () => {
    await sys?.stop();
    try {
      const ours = async () => (await direct.listServers()).filter((s) => [providerA, providerB].includes(String(s.metadata.nodepool_provider_name)));
      for (const s of await ours()) await direct.deleteServer(s.id).catch(() => false);
      await waitFor(async () => (await ours()).length === 0, { timeoutMs: 60_000, what: 'no server of the breaker providers left', intervalMs: 500 });
    } finally {
      session?.close();
      await proxy?.stop();
      await rm(dir, { recursive: true, force: true });
    }
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  /** Takes one node of `label` and hands it back (Zuul's flow); the node as it was served. */
  async function one(label: string): Promise<NodeRecord> {
    const [node] = await client.requestNodes([label], { timeoutMs: 120_000 });
    assert.ok(node, `a node of ${label}`);
    await client.release(node.id);
    return node;
  }

  /** Takes `count` nodes of `label` one after another (each handed back); the nodes and the requests per second. */
  async function pace(label: string, count: number): Promise<{ nodes: NodeRecord[]; perS: number }> {
    const t0 = Date.now();
    const nodes: NodeRecord[] = [];
    for (let i = 0; i < count; i++) nodes.push(await one(label));
    return { nodes, perS: count / ((Date.now() - t0) / 1000) };
  }

  const breakerOf = async (provider: string) => (await sys.store.listLaunchers()).find((l) => l.provider === provider)?.standing?.breaker;

  it('opens A\'s breaker, B serves every request meanwhile, the probe after the backoff closes it once A works; nothing lost or leaked', { timeout: 900_000 }, async () => {
    await one('only-b'); // B up and warm
    const alone = await pace('only-b', PACE_REQUESTS);

    proxy.arm({ call: 'create', kind: 'fail', times: 1_000_000 });
    const faultAt = Date.now();
    const served: NodeRecord[] = [...alone.nodes];
    const opened = await waitFor(async () => {
      served.push(await one('small'));
      const b = await breakerOf(providerA);
      return b?.state === 'open' ? b : undefined;
    }, { timeoutMs: 300_000, what: 'A\'s breaker open', intervalMs: 0 });
    const failedCreates = proxy.injected('create');
    assert.equal(failedCreates, 2, 'two failed launches opened it');
    assert.ok(served.every((n) => n.provider === providerB), 'every request served, by B');

    const heldUntil = opened.state === 'open' ? opened.until : 0;
    let duringPace = { perS: 0, held: 0 };
    let probed: NodeRecord | undefined;
    // A request only A serves waits, and request-list says why, until the probe.
    const waiting = await client.request(['only-a']);
    const reasons = await waitFor(async () => {
      const view = await requestListView({ store: sys.store, config: () => loadConfig(sys.configPath), clock: Date.now });
      const json = view.json as Array<{ id: string; state: string; waitReasons: Array<{ provider: string; reason: string }> }>;
      const row = json.find((r) => r.id === waiting.id);
      return row?.waitReasons.length ? row.waitReasons.map((w) => [w.provider, w.reason]) : undefined;
    }, { timeoutMs: 20_000, what: 'request-list naming why the only-a request waits', intervalMs: 200 });
    assert.ok(Date.now() < heldUntil, 'read while the breaker held');
    assert.deepEqual(reasons, [[providerA, 'breaker-open'], [providerB, 'label-not-served']]);

    // The fault goes 2 s before the backoff ends, whatever the test is doing then (under load B's
    // requests below may run past it): the probe then finds A working.
    let fixedAt = 0;
    const fix = setTimeout(() => {
      proxy.faults.length = 0;
      fixedAt = Date.now();
    }, Math.max(0, heldUntil - 2000 - Date.now()));
    try {
      // While it holds, `small` goes to B at B's pace, and A sees no create. A request served
      // after the backoff may be A's probe, or A's once the probe closed the breaker.
      const during = await pace('small', PACE_REQUESTS);
      served.push(...during.nodes);
      const whileHeld = during.nodes.filter((n) => n.created < heldUntil);
      assert.ok(whileHeld.length > 0, 'some of B\'s requests came while the breaker held');
      assert.deepEqual(whileHeld.map((n) => n.provider), Array(whileHeld.length).fill(providerB), 'every request made while it held served by B');
      duringPace = { perS: during.perS, held: whileHeld.length };
      assert.equal(proxy.calls.filter((c) => c.call === 'create' && c.at > faultAt && c.at < heldUntil).length, failedCreates, 'no create reached A while its breaker held');
      const done = await sys.waitForRequest(waiting.id, ['fulfilled', 'failed'], 300_000);
      assert.equal(done.state, 'fulfilled', `the waiting request served (${done.reason ?? ''})`);
      [probed] = await client.accept(done);
    } finally {
      clearTimeout(fix);
      proxy.faults.length = 0;
    }
    assert.equal(probed?.provider, providerA, 'the probe served it');
    const probeAt = proxy.calls.find((c) => c.call === 'create' && c.outcome === 'forwarded' && c.at > faultAt)?.at ?? 0;
    assert.ok(probeAt >= heldUntil, 'the probe came after the backoff');
    await waitFor(async () => (await breakerOf(providerA))?.state === 'closed', { timeoutMs: 60_000, what: 'A\'s breaker closed', intervalMs: 200 });
    const recoverMs = Date.now() - (fixedAt || Date.now());

    // Every node handed back; settled: no node left, and no server of either provider without one.
    if (probed) await client.release(probed.id);
    const lostRequests = (await sys.store.listRequests()).filter((r) => r.state === 'failed').map((r) => r.id);
    let leaked: string[] = [];
    await waitFor(async () => {
      const named = new Set((await sys.store.listNodes()).flatMap((n) => (n.externalId ? [n.externalId] : [])));
      leaked = (await direct.listServers()).filter((s) => [providerA, providerB].includes(String(s.metadata.nodepool_provider_name)) && !named.has(s.id)).map((s) => `${s.id} ${s.status}`);
      return named.size === 0 && leaked.length === 0;
    }, { timeoutMs: 120_000, what: 'every node deleted and no server of either provider left', intervalMs: 500 }).catch(() => undefined);
    recordFault({
      scenario: 'A cloud failing every launch (breaker)', runs: failedCreates, recovered: 1, lost: lostRequests.length, leaked: leaked.length, recoverMs,
      notes: `B served ${PACE_REQUESTS} requests at ${duringPace.perS.toFixed(2)}/s with A's breaker open (${duringPace.held} made while it held), ${alone.perS.toFixed(2)}/s alone (${(duringPace.perS / alone.perS).toFixed(2)}×); A saw no create while open; the probe ${((probeAt - heldUntil) / 1000).toFixed(1)} s after the backoff`,
    });
    assert.deepEqual(lostRequests, [], 'no request failed');
    assert.deepEqual(leaked, [], 'no server leaked');
  });
});
