import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadCloud } from '../../../lib/drivers/openstack/clouds-yaml.js';
import { GlanceClient } from '../../../lib/drivers/openstack/glance.js';
import { KeystoneSession } from '../../../lib/drivers/openstack/keystone.js';
import { CloudError, ConfigError } from '../../../lib/errors.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { freePort, runningProcesses } from '../../support/processes.js';

describe('Keystone v3 against the loopback cloud', () => {
  let cloud: LoopbackCloud;
  let tmp: string;

  before(async () => {
    cloud = await useLoopbackCloud();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'nodepool-keystone-test-'));
  });

  after(async () => {
    await cloud?.stop();
    await rm(tmp, { recursive: true, force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), [], 'no tracked process left running');
  });

  it('loads the cloud from clouds.yaml, authenticates and finds the image endpoint', async () => {
    const creds = await loadCloud(cloud.cloudName, { path: cloud.cloudsYamlPath });
    assert.equal(creds.username, 'demo');
    assert.equal(creds.regionName, 'RegionOne');
    const session = await KeystoneSession.authenticate(creds);
    assert.match(await session.token(), /^\S{100,}$/);
    assert.match(session.projectId ?? '', /^[0-9a-f]{32}$/);
    assert.ok(session.expiresAt > Date.now() + 30 * 60_000, 'token valid for a while');
    assert.equal(session.endpoint('image'), `http://127.0.0.1:${cloud.glancePort}`);
    assert.equal(session.endpoint('identity'), cloud.authUrl);
    const internal = await KeystoneSession.authenticate({ ...creds, interface: 'internal' });
    assert.equal(internal.endpoint('image'), `http://127.0.0.1:${cloud.glancePort}`);
    assert.throws(() => session.endpoint('compute'), (err: unknown) => err instanceof CloudError && /no compute endpoint/.test(err.message));
  });

  it('finds clouds.yaml on the search path, skipping missing candidates', async () => {
    const missing = path.join(tmp, 'nope', 'clouds.yaml');
    const creds = await loadCloud(cloud.adminCloudName, { searchPaths: [missing, cloud.cloudsYamlPath, '/etc/openstack/clouds.yaml'] });
    assert.equal(creds.username, 'admin');
    await assert.rejects(loadCloud('loopback', { searchPaths: [missing] }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.message, `clouds.yaml: not found (looked in ${missing})`);
      return true;
    });
    await assert.rejects(loadCloud('loopback', { path: missing }), (err: unknown) =>
      err instanceof ConfigError && err.message.startsWith(`${missing}: cannot read: ENOENT`));
  });

  it('scopes a token to a domain', async () => {
    const admin = await loadCloud(cloud.adminCloudName, { path: cloud.cloudsYamlPath });
    const { projectName: _p, ...unscoped } = admin;
    const session = await KeystoneSession.authenticate({ ...unscoped, domainName: 'Default' });
    assert.equal(session.projectId, undefined);
    assert.equal(session.endpoint('identity'), cloud.authUrl);
  });

  it('fails with a 401 CloudError naming the user when the password is wrong', async () => {
    const creds = await loadCloud(cloud.cloudName, { path: cloud.cloudsYamlPath });
    await assert.rejects(KeystoneSession.authenticate({ ...creds, password: 'wrong' }), (err: unknown) => {
      assert.ok(err instanceof CloudError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.message, `Keystone authentication failed for user 'demo' in project 'demo' at ${cloud.authUrl}/auth/tokens: `
        + '401; cloud said: The request you have made requires authentication.');
      return true;
    });
  });

  it('fails with a CloudError without status when Keystone is unreachable', async () => {
    const creds = await loadCloud(cloud.cloudName, { path: cloud.cloudsYamlPath });
    const port = await freePort();
    await assert.rejects(KeystoneSession.authenticate({ ...creds, authUrl: `http://127.0.0.1:${port}/v3` }), (err: unknown) => {
      assert.ok(err instanceof CloudError);
      assert.equal(err.status, undefined);
      assert.match(err.message, /POST http:\/\/127\.0\.0\.1:\d+\/v3\/auth\/tokens failed: connect ECONNREFUSED/);
      return true;
    });
  });

  it('re-authenticates when the token is about to expire', async () => {
    let now = Date.now();
    const creds = await loadCloud(cloud.cloudName, { path: cloud.cloudsYamlPath });
    const session = await KeystoneSession.authenticate(creds, { now: () => now, reauthMarginMs: 300_000 });
    const first = await session.token();
    const expiry = session.expiresAt;
    now = expiry - 310_000;
    assert.equal(await session.token(), first, 'still outside the margin');
    now = expiry - 290_000;
    const [a, b] = await Promise.all([session.token(), session.token()]);
    assert.notEqual(a, first, 'a new token inside the margin');
    assert.equal(a, b, 'concurrent callers share one re-authentication');
    assert.ok(session.expiresAt > expiry);
  });

  it('re-authenticates once and retries when a service answers 401', async () => {
    const demo = await KeystoneSession.authenticate(await loadCloud(cloud.cloudName, { path: cloud.cloudsYamlPath }));
    const admin = await KeystoneSession.authenticate(await loadCloud(cloud.adminCloudName, { path: cloud.cloudsYamlPath }));
    const revoked = await demo.token();
    // Revoke it before Glance ever saw it (Glance caches tokens it has validated).
    await admin.request(`${admin.endpoint('identity')}/auth/tokens`, { method: 'DELETE', headers: { 'X-Subject-Token': revoked } });
    const images = await new GlanceClient(demo).listImages({ properties: { nodepool_test: 'retry-after-401' } });
    assert.deepEqual(images, []);
    assert.notEqual(await demo.token(), revoked);
  });
});
