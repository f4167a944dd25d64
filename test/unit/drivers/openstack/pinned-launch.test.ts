/**
 * An openstack launch of a `building` record that names an upload in `image` (the validation
 * gate, issue 14 §2), against a scripted Nova on 127.0.0.1: it boots exactly that upload's
 * Glance image (not the newest ready one), refuses an upload it must not boot, and a validation
 * node's failed host check carries the tail of Nova's console log.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import { validationAllocation, type NodeRecord, type UploadRecord } from '../../../../lib/store/models.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import { ScriptedCloud } from '../../../support/scripted-cloud.js';
import { startScriptedProvider, type ScriptedProvider } from '../../../support/scripted-provider.js';

/** A 127.0.0.1 port nothing listens on (bound, then closed). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

describe('openstack: a launch pinned to an upload', () => {
  let dir: string;
  let store: SqliteStore;
  let cloud: ScriptedCloud;
  let provider: OpenStackProvider;
  let scripted: ScriptedProvider;
  let older: UploadRecord;
  let validating: UploadRecord;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'openstack-pinned-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    const build = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    await store.updateBuild(build.id, { state: 'ready' });
    const a = await store.createUpload({ buildId: build.id, provider: 'scripted', imageName: 'deb', externalName: 'deb-1' });
    older = (await store.updateUpload(a.id, { state: 'ready', externalId: 'img-old' })) as UploadRecord;
    const b = await store.createUpload({ buildId: build.id, provider: 'scripted', imageName: 'deb', externalName: 'deb-2' });
    validating = (await store.updateUpload(b.id, { state: 'validating', externalId: 'img-new' })) as UploadRecord;
  });

  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    cloud = await ScriptedCloud.start();
    const port = await closedPort();
    cloud.answer('GET', /^\/v2\.1\/flavors\/detail$/, { body: { flavors: [{ id: 'f1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 }] } });
    cloud.answer('GET', /^\/v2\.0\/networks$/, { body: { networks: [{ id: 'net-1', name: 'private' }] } });
    cloud.answer('POST', /^\/v2\.1\/servers$/, { status: 202, body: { server: { id: 's1' } } });
    cloud.answer('GET', /^\/v2\.1\/servers\/s1$/, () => (cloud.seen('DELETE', /^\/v2\.1\/servers\/s1$/).length
      ? { status: 404, body: { itemNotFound: { message: 'gone' } } }
      : { body: { server: { id: 's1', name: 'n1', status: 'ACTIVE', metadata: {}, addresses: { private: [{ addr: '127.0.0.1', version: 4 }] } } } }));
    cloud.answer('POST', /^\/v2\.1\/servers\/s1\/action$/, { body: { output: 'SeaBIOS\nBooting from Hard Disk...\nNo bootable device.\n' } });
    cloud.answer('DELETE', /^\/v2\.1\/servers\/s1$/, { status: 204 });
    scripted = await startScriptedProvider(cloud, store, [
      'labels: [{name: tiny}]',
      'diskimages: [{name: deb}]',
      'providers:',
      `  - {name: scripted, cloud: scripted, launch-retries: 1, launch-timeout: 10, boot-timeout: 1,`,
      `     diskimages: [{name: deb, connection-port: ${port}, validate: {}}],`,
      '     pools: [{name: main, networks: [private], labels: [{name: tiny, diskimage: deb, flavor-name: m1.tiny}]}]}',
      '',
    ].join('\n'), path.join(dir, 'nodepool.yaml'));
    provider = scripted.provider;
  });

  afterEach(async () => {
    await scripted.stop();
    await cloud.stop();
  });

  async function launch(over: Partial<NodeRecord>): Promise<NodeRecord> {
    const handler = provider.getRequestHandler('main', await store.createRequest({ labels: ['tiny'], requestor: 'pinned-test' }));
    const node = await store.createNode({ state: 'building', provider: 'scripted', pool: 'main', labels: ['tiny'], launcher: 'test', ...over });
    handler.launch(node);
    await waitFor(() => handler.launchesComplete(), { timeoutMs: 15_000, what: `the launch of node ${node.id}` });
    const done = await store.getNode(node.id);
    assert.ok(done);
    return done;
  }

  it('boots exactly the named upload\'s image, and a validation node\'s failed host check carries the console tail', async () => {
    const node = await launch({ image: validating.id, validatesUpload: validating.id, allocatedTo: validationAllocation(validating.id) });
    const [create] = cloud.seen('POST', /^\/v2\.1\/servers$/);
    assert.equal((JSON.parse(create?.body ?? '{}') as { server: { imageRef: string } }).server.imageRef, 'img-new', `not the newest ready upload ${older.externalId}`);
    assert.equal(node.state, 'failed');
    assert.equal(node.image, validating.id);
    assert.match(node.reason ?? '', /^server s1 failed its host check within boot-timeout 1 s: .*\n--- console tail ---\nSeaBIOS\nBooting from Hard Disk\.\.\.\nNo bootable device\.$/s);
    assert.equal(cloud.seen('DELETE', /^\/v2\.1\/servers\/s1$/).length, 1, 'the server is deleted');
  });

  it('refuses an upload that is failed without creating a server', async () => {
    await store.updateUpload(older.id, { state: 'failed' });
    try {
      const node = await launch({ image: older.id });
      assert.equal(node.state, 'failed');
      assert.equal(node.reason, `upload ${older.id} is failed`);
      assert.equal(cloud.seen('POST', /^\/v2\.1\/servers$/).length, 0);
    } finally {
      await store.updateUpload(older.id, { state: 'ready' });
    }
  });
});
