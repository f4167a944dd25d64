/**
 * Nova and Neutron answering garbage from a real HTTP server on 127.0.0.1: each call names
 * itself and the field in a CloudError with the cloud's words, and a launch against such a
 * cloud ends as a failed node with that reason (not a TypeError).
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { KeystoneSession } from '../../../../lib/drivers/openstack/keystone.js';
import { NovaClient } from '../../../../lib/drivers/openstack/nova.js';
import { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
import { CloudError } from '../../../../lib/errors.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import { ScriptedCloud } from '../../../support/scripted-cloud.js';
import { startScriptedProvider, type ScriptedProvider } from '../../../support/scripted-provider.js';

async function rejectsWith(p: Promise<unknown>, message: string | RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof CloudError, `expected a CloudError, got ${String((err as Error).stack)}`);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

const SERVER = { id: 's1', name: 'n1', status: 'ACTIVE', metadata: {}, addresses: { private: [{ addr: '10.0.0.5', version: 4 }] } };
const FLAVORS = { flavors: [{ id: 'f1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 }] };
const NETWORKS = { networks: [{ id: 'net-1', name: 'private' }] };

describe('Nova and Neutron answering garbage', () => {
  let cloud: ScriptedCloud;
  let session: KeystoneSession;
  let nova: NovaClient;

  beforeEach(async () => {
    cloud = await ScriptedCloud.start();
    session = await KeystoneSession.authenticate(cloud.creds(), { http: { retryDelayMs: 1 } });
    nova = new NovaClient(session);
  });

  afterEach(async () => {
    session.close();
    await cloud.stop();
  });

  const spec = { name: 'n1', imageId: 'img-1', flavorId: 'f1', networkIds: ['net-1'], metadata: {} };

  it('names a create answer without a server id, or not JSON', async () => {
    cloud.answer('POST', /^\/v2\.1\/servers$/, { status: 202, body: { server: { name: 'n1' } } });
    await rejectsWith(nova.createServer(spec),
      'Nova POST /v2.1/servers: field "server.id": expected a non-empty string id, got undefined; cloud said: {"server":{"name":"n1"}}');
    cloud.answer('POST', /^\/v2\.1\/servers$/, { status: 202, body: '<html><body>Accepted</body></html>', headers: { 'Content-Type': 'text/html' } });
    await rejectsWith(nova.createServer(spec), 'Nova POST /v2.1/servers: answer 202 is not JSON; cloud said: Accepted');
    assert.equal(cloud.seen('POST', /^\/v2\.1\/servers$/).length, 2, 'a create is never retried');
  });

  it('names a server poll with a missing status or malformed addresses', async () => {
    cloud.answer('GET', /^\/v2\.1\/servers\/s1$/, { body: { server: { id: 's1' } } });
    await rejectsWith(nova.getServer('s1'), 'Nova GET /v2.1/servers/s1: field "server.status": expected string, got undefined; cloud said: {"server":{"id":"s1"}}');
    cloud.answer('GET', /^\/v2\.1\/servers\/s1$/, { body: { server: { ...SERVER, addresses: { private: '10.0.0.5' } } } });
    await rejectsWith(nova.getServer('s1'), /^Nova GET \/v2\.1\/servers\/s1: field "server\.addresses\.private": expected array, got string "10\.0\.0\.5"; /);
    cloud.answer('GET', /^\/v2\.1\/servers\/s1$/, { body: { server: { ...SERVER, flavor: { vcpus: '1', ram: 512 } } } });
    await rejectsWith(nova.getServer('s1'), /^Nova GET \/v2\.1\/servers\/s1: field "server\.flavor\.vcpus": expected number, got string "1"; /);
    cloud.answer('GET', /^\/v2\.1\/servers\/s1$/, { body: { server: { ...SERVER, id: 's2' } } });
    await rejectsWith(nova.getServer('s1'), /^Nova GET \/v2\.1\/servers\/s1: field "server\.id": expected "s1", got string "s2"; /);
  });

  it('retries a poll once after a 5xx and passes on the words of the second', async () => {
    cloud.answer('GET', /^\/v2\.1\/servers\/s1$/, [{ status: 503, body: 'busy' }, { body: { server: SERVER } }]);
    assert.equal((await nova.getServer('s1'))?.status, 'ACTIVE');
    cloud.answer('GET', /^\/v2\.1\/servers\/s2$/, { status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } } });
    await rejectsWith(nova.getServer('s2'), 'Nova GET /v2.1/servers/s2 failed with 500; cloud said: Unexpected API Error.');
    assert.equal(cloud.seen('GET', /^\/v2\.1\/servers\/s2$/).length, 2);
  });

  it('passes on the words of a failed delete (not retried)', async () => {
    cloud.answer('DELETE', /^\/v2\.1\/servers\/s1$/, { status: 500, body: '<html><body><h1>500 Internal Server Error</h1>oops</body></html>', headers: { 'Content-Type': 'text/html' } });
    await rejectsWith(nova.deleteServer('s1'), 'Nova DELETE /v2.1/servers/s1 failed with 500; cloud said: 500 Internal Server Error');
    assert.equal(cloud.seen('DELETE', /^\/v2\.1\/servers\/s1$/).length, 1);
  });

  it('names malformed server lists, flavors, limits and zones', async () => {
    cloud.answer('GET', /^\/v2\.1\/servers\/detail$/, { body: { servers: [SERVER], servers_links: [{ rel: 'next', href: 9 }] } });
    await rejectsWith(nova.listServers(), /^Nova GET \/v2\.1\/servers\/detail: field "servers_links\[0\]\.href": expected string, got number 9; /);
    cloud.answer('GET', /^\/v2\.1\/servers\/detail$/, { body: {} });
    await rejectsWith(nova.listServers(), 'Nova GET /v2.1/servers/detail: field "servers": expected array, got undefined; cloud said: {}');
    cloud.answer('GET', /^\/v2\.1\/flavors\/detail$/, { body: { flavors: [{ id: 'f1', name: 'm1.tiny', vcpus: '1', ram: 512 }] } });
    await rejectsWith(nova.listFlavors(), /^Nova GET \/v2\.1\/flavors\/detail: field "flavors\[0\]\.vcpus": expected number, got string "1"; /);
    cloud.answer('GET', /^\/v2\.1\/limits$/, { body: { absolute: {} } });
    await rejectsWith(nova.getLimits(), 'Nova GET /v2.1/limits: field "limits": expected object, got undefined; cloud said: {"absolute":{}}');
    cloud.answer('GET', /^\/v2\.1\/os-availability-zone$/, { body: { availabilityZoneInfo: [{ zoneState: { available: true } }] } });
    await rejectsWith(nova.listAvailabilityZones(), /^Nova GET \/v2\.1\/os-availability-zone: field "availabilityZoneInfo\[0\]\.zoneName": expected string, got undefined; /);
    cloud.answer('POST', /^\/v2\.1\/servers\/s1\/action$/, { body: { output: ['line'] } });
    await rejectsWith(nova.consoleOutput('s1'), /^Nova POST \/v2\.1\/servers\/s1\/action: field "output": expected string, got array; /);
  });

  it('names malformed Neutron networks', async () => {
    cloud.answer('GET', /^\/v2\.0\/networks$/, { body: { networks: [{ name: 'private' }] } });
    await rejectsWith(nova.networkId('private'),
      'Neutron GET /v2.0/networks: field "networks[0].id": expected a non-empty string id, got undefined; cloud said: {"networks":[{"name":"private"}]}');
    cloud.answer('GET', /^\/v2\.0\/networks$/, { body: { networks: [] } });
    cloud.answer('GET', /^\/v2\.0\/networks\/net-1$/, { body: { network: 'net-1' } });
    await rejectsWith(nova.networkId('net-1'), /^Neutron GET \/v2\.0\/networks\/net-1: field "network": expected object, got string "net-1"; /);
  });
});

describe('an openstack launch against a cloud answering garbage', () => {
  let cloud: ScriptedCloud;
  let dir: string;
  let store: SqliteStore;
  let provider: OpenStackProvider;
  let scripted: ScriptedProvider;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-nova-garbage-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
  });

  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    cloud = await ScriptedCloud.start();
    cloud.answer('GET', /^\/v2\.1\/flavors\/detail$/, { body: FLAVORS });
    cloud.answer('GET', /^\/v2\.0\/networks$/, { body: NETWORKS });
    cloud.answer('DELETE', /^\/v2\.1\/servers\/s1$/, { status: 204 });
    scripted = await startScriptedProvider(cloud, store, [
      'labels: [{name: tiny}]',
      'providers:',
      '  - {name: scripted, cloud: scripted, launch-retries: 1, launch-timeout: 10,',
      '     cloud-images: [{name: cirros, image-id: img-1}],',
      '     pools: [{name: main, networks: [private], host-key-checking: false, labels: [{name: tiny, cloud-image: cirros, flavor-name: m1.tiny}]}]}',
      '',
    ].join('\n'), path.join(dir, 'nodepool.yaml'));
    provider = scripted.provider;
  });

  afterEach(async () => {
    await scripted.stop();
    await cloud.stop();
  });

  async function launch(): Promise<NodeRecord> {
    const handler = provider.getRequestHandler('main', await store.createRequest({ labels: ['tiny'], requestor: 'garbage-test' }));
    const node = await store.createNode({ state: 'building', provider: 'scripted', pool: 'main', labels: ['tiny'], launcher: 'test', ...handler.nodeMetadata('tiny') });
    handler.launch(node);
    await waitFor(() => handler.launchesComplete(), { timeoutMs: 10_000, what: `the launch of node ${node.id}` });
    const done = await store.getNode(node.id);
    assert.ok(done);
    return done;
  }

  it('fails the node with the field Nova left out of its create answer', async () => {
    cloud.answer('POST', /^\/v2\.1\/servers$/, { status: 202, body: { server: { adminPass: 'x' } } });
    const node = await launch();
    assert.equal(node.state, 'failed');
    assert.equal(node.reason, 'Nova POST /v2.1/servers: field "server.id": expected a non-empty string id, got undefined; cloud said: {"server":{"adminPass":"<redacted>"}}');
  });

  it('fails the node with the cloud\'s words when a poll answers an HTML page, and deletes the server', async () => {
    cloud.answer('POST', /^\/v2\.1\/servers$/, { status: 202, body: { server: { id: 's1' } } });
    cloud.answer('GET', /^\/v2\.1\/servers\/s1$/, () => (cloud.seen('DELETE', /^\/v2\.1\/servers\/s1$/).length
      ? { status: 404, body: { itemNotFound: { message: 'gone' } } }
      : { status: 200, body: '<html><body><h1>Maintenance</h1>back soon</body></html>', headers: { 'Content-Type': 'text/html' } }));
    const node = await launch();
    assert.equal(node.state, 'failed');
    assert.equal(node.reason, 'Nova GET /v2.1/servers/s1: answer 200 is not JSON; cloud said: Maintenance back soon');
    assert.equal(cloud.seen('DELETE', /^\/v2\.1\/servers\/s1$/).length, 1, 'the server of the failed attempt is deleted');
  });
});
