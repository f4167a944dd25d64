/**
 * The web status of an in-process nodepool-server running the launcher: an openstack provider
 * against a scripted Nova (servers ACTIVE at once; one flavor Nova refuses) serves node
 * requests, and /node-list, /request-list, /label-list (Nodepool's and ours at /api), /metrics and
 * statsd follow them.
 * Also `/ready` and `/health/ready` while a static provider is still starting (its host does
 * not answer until its scan times out) and after.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadConfig } from '../../../lib/config/load.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { NodepoolServer } from '../../../server/main.js';
import { testImageServices } from '../../support/image-services.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { freePort } from '../../support/processes.js';
import { ScriptedCloud } from '../../support/scripted-cloud.js';
import { testLogger } from '../../support/test-log.js';
import { playNova } from './fake-nova.js';
import { get, sample, StatsdListener } from './web-helpers.js';

/** An in-process server of `sys`'s config with the web status on `port` (not awaited: the caller decides). */
function createServer(sys: LauncherSystem, port: number, statsdPort?: number): Promise<NodepoolServer> {
  const config = loadConfig(sys.configPath);
  const log = testLogger();
  return NodepoolServer.create({
    config: { ...config, webapp: { ...config.webapp, port, listenAddress: '127.0.0.1' } }, log, hostname: 'web-test',
    imageServices: testImageServices(() => config.cloudsFile, log), webapp: true,
    ...(statsdPort ? { statsd: { host: '127.0.0.1', port: statsdPort, gaugeIntervalMs: 100 } } : {}),
  });
}

describe('web status of the launcher: nodes, requests and launches', () => {
  let cloud: ScriptedCloud;
  let sys: LauncherSystem;
  let server: NodepoolServer;
  let statsd: StatsdListener;
  let port: number;

  before(async () => {
    cloud = await ScriptedCloud.start();
    playNova(cloud);
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }, { name: 'broken' }, { name: 'unserved' }],
      providers: [{
        name: 'scripted', driver: 'openstack', cloud: 'scripted', 'launch-retries': 1, 'launch-timeout': 10,
        'cloud-images': [{ name: 'cirros', 'image-id': 'img-1' }],
        pools: [{
          name: 'main', 'max-servers': 5, networks: ['private'], 'host-key-checking': false,
          labels: [{ name: 'small', 'cloud-image': 'cirros', 'flavor-name': 'm1.tiny' }, { name: 'broken', 'cloud-image': 'cirros', 'flavor-name': 'm1.broken' }],
        }],
      }],
    });
    const cloudsFile = path.join(sys.dir, 'clouds.yaml');
    await cloud.writeCloudsYaml(cloudsFile);
    await sys.rewrite((p) => ({ ...p, extra: { 'clouds-file': cloudsFile } }));
    statsd = await StatsdListener.start();
    port = await freePort();
    server = await createServer(sys, port, statsd.port);
  });

  after(async () => {
    await server?.stop();
    await sys?.stop();
    await cloud?.stop();
    await statsd?.close();
  });

  it('counts a launch that became ready and one Nova refused, with the nodes and requests they left', async () => {
    const before = (await get(port, '/metrics')).body;
    assert.equal(sample(before, 'nodepool_nodes', { provider: 'scripted', label: 'small', state: 'ready' }), 0);
    assert.equal(sample(before, 'nodepool_requests', { state: 'fulfilled' }), 0);
    assert.equal(sample(before, 'nodepool_launch_total', { provider: 'scripted', result: 'ready' }), undefined);
    assert.equal(sample(before, 'nodepool_provider_quota', { provider: 'scripted', resource: 'max-servers' }), 5);
    // The cloud's own quota, from Nova's limits.
    assert.deepEqual(['instances', 'cores', 'ram'].map((resource) => sample(before, 'nodepool_provider_quota', { provider: 'scripted', resource })), [100, 100, 1_000_000]);
    assert.equal(sample(before, 'nodepool_loop_failures', { loop: 'pool-worker:scripted/main' }), 0);

    const client = await sys.client('web-test-consumer');
    const [node] = await client.requestNodes(['small'], { timeoutMs: 30_000 });
    assert.ok(node);
    const refused = await client.request(['broken']);
    await sys.waitForRequest(refused.id, ['failed'], 30_000);

    const m = await waitFor(async () => {
      const body = (await get(port, '/metrics')).body;
      return sample(body, 'nodepool_launch_total', { provider: 'scripted', result: 'error.unknown' }) === 1 ? body : undefined;
    }, { timeoutMs: 10_000, what: 'the failed launch in /metrics', intervalMs: 100 });
    assert.equal(sample(m, 'nodepool_launch_total', { provider: 'scripted', result: 'ready' }), 1);
    assert.equal(sample(m, 'nodepool_launch_duration_seconds_count', { provider: 'scripted', result: 'ready' }), 1);
    assert.equal(sample(m, 'nodepool_nodes', { provider: 'scripted', label: 'small', state: 'in-use' }), 1);
    assert.equal(sample(m, 'nodepool_requests', { state: 'failed' }), 1);
    // The consumer took its nodes, which removes a fulfilled request.
    assert.equal(sample(m, 'nodepool_requests', { state: 'fulfilled' }), 0);

    await waitFor(() => statsd.of('nodepool.launch.error.unknown').length === 2, { timeoutMs: 10_000, what: 'statsd launch metrics', intervalMs: 50 });
    assert.deepEqual(statsd.of('nodepool.launch.ready').filter((l) => l.endsWith('|c')), ['nodepool.launch.ready:1|c']);
    assert.equal(statsd.of('nodepool.launch.provider.scripted.ready').length, 2);
    assert.equal(statsd.of('nodepool.launch.requestor.web-test-consumer.error.unknown').length, 2);
    await waitFor(() => statsd.lines.includes('nodepool.label.small.nodes.in-use:1|g'), { timeoutMs: 5000, what: 'the in-use node gauge', intervalMs: 50 });
    assert.ok(statsd.lines.includes('nodepool.provider.scripted.max_servers:5|g'));
  });

  it('lists the nodes, requests and labels as the CLI does, and one node by ?node_id=', async () => {
    const nodes = JSON.parse((await get(port, '/api/node-list.json')).body) as Array<{ id: string; labels: string[]; state: string; locked: boolean; externalId: string }>;
    const inUse = nodes.find((n) => n.state === 'in-use');
    assert.ok(inUse, JSON.stringify(nodes));
    assert.deepEqual(inUse.labels, ['small']);
    assert.match(inUse.externalId, /^srv-\d+$/);
    const one = JSON.parse((await get(port, `/api/node-list.json?node_id=${inUse.id}`)).body) as unknown[];
    assert.equal(one.length, 1);
    const text = (await get(port, `/node-list?node_id=${inUse.id}&fields=id,provider,label,server_id,state`)).body;
    const rows = text.split('\n').filter((l) => l.startsWith('|'));
    assert.equal(rows[0], '| ID         | Provider | Label | Server ID | State  |');
    assert.deepEqual(rows.slice(1), [`| ${inUse.id} | scripted | small | ${inUse.externalId.padEnd(9)} | in-use |`]);
    const requests = JSON.parse((await get(port, '/api/request-list', 'application/json')).body) as Array<{ state: string; labels: string[]; reason: string | null }>;
    assert.deepEqual(requests.map((r) => [r.labels[0], r.state]), [['broken', 'failed']]);
    assert.match(requests[0]?.reason ?? '', /No valid host/);
    const labels = (await get(port, '/api/label-list')).body;
    assert.match(labels, /^\| small +\| 0 +\| 0 +\| 0 +\| 1 +\| 0 +\| scripted\/main \|$/m);
    assert.match(labels, /^unserved: no provider pool serves it; requests for it fail$/m);
  });

  it("lists them in Nodepool's shape: the node's fields, the request's, and the labels the running pool registered", async () => {
    const nodes = JSON.parse((await get(port, '/node-list', 'application/json')).body) as Array<Record<string, unknown>>;
    const inUse = nodes.find((n) => n.state === 'in-use');
    assert.ok(inUse, JSON.stringify(nodes));
    assert.deepEqual([inUse.provider, inUse.label, inUse.locked, inUse.pool], ['scripted', ['small'], 'unlocked', 'main']);
    assert.match(String(inUse.server_id), /^srv-\d+$/);
    assert.match(String(inUse.age), /^\d{2}:\d{2}:\d{2}:\d{2}$/);
    const requests = JSON.parse((await get(port, '/request-list', 'application/json')).body) as Array<Record<string, unknown>>;
    assert.deepEqual(requests.map((r) => [r.node_types, r.state, r.requestor]), [[['broken'], 'failed', 'web-test-consumer']]);
    const labels = JSON.parse((await get(port, '/label-list', 'application/json')).body) as Array<{ label: string }>;
    assert.deepEqual(labels.map((l) => l.label).sort(), ['broken', 'small'], 'the pool scripted/main registers small and broken; nothing serves unserved');
  });
});

describe('web status readiness while providers start', () => {
  let sys: LauncherSystem;
  let server: NodepoolServer | undefined;

  before(async () => {
    // Nothing listens on this port: the static provider's start-up scan retries until its timeout.
    const silent = await freePort();
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }],
      providers: [{ name: 'hosts', driver: 'static', pools: [{ name: 'main', nodes: [{ name: '127.0.0.1', 'connection-port': silent, labels: ['small'], timeout: 3 }] }] }],
    });
  });

  after(async () => {
    await server?.stop();
    await sys?.stop();
  });

  it('answers /ready and /health/ready 503 until every provider has started, then 200', async () => {
    const port = await freePort();
    const creating = createServer(sys, port);
    const early = await waitFor(async () => {
      try {
        return await get(port, '/ready');
      } catch {
        return undefined; // not listening yet
      }
    }, { timeoutMs: 10_000, what: 'the web status to listen', intervalMs: 20 });
    const starting = await get(port, '/health/ready');
    server = await creating;
    assert.deepEqual([early.status, early.body], [503, 'not ready: not every provider has started yet\n']);
    assert.equal(starting.status, 503);
    assert.match(starting.body, /^starting: not every provider has started yet$/m);
    const ready = await get(port, '/ready');
    assert.deepEqual([ready.status, ready.body], [200, 'OK']);
    assert.equal((await get(port, '/health/live')).status, 200);
    const health = await waitFor(async () => {
      const r = await get(port, '/health/ready');
      return r.status === 200 ? r : undefined;
    }, { timeoutMs: 10_000, what: '/health/ready 200', intervalMs: 100 });
    assert.equal(health.body, 'ok\n');
  });
});
