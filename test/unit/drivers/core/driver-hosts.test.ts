/**
 * The drivers' host accesses (lib/drivers/core/driver-hosts.ts): one access per provider config and
 * host settings, shared by the provider and its image service, closed exactly once. The
 * lifecycle is checked with a small driver of the test's own that counts what it made and
 * closed; the sharing with the real openstack driver against a scripted Keystone and Glance
 * on 127.0.0.1 (one token for both, and Nova reached without borrowing an image service).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import type { ProviderConfig } from '../../../../lib/drivers/config-registry.js';
import type { Driver, Provider } from '../../../../lib/drivers/contract/driver.js';
import { driverHosts, type DriverHosts } from '../../../../lib/drivers/core/driver-hosts.js';
import type { DriverHost, HostAccess } from '../../../../lib/drivers/contract/host-access.js';
import type { ImageService } from '../../../../lib/drivers/contract/image-service.js';
import { openstackDriver } from '../../../../lib/drivers/openstack/index.js';
import type { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
import { OpenStackImageService } from '../../../../lib/drivers/openstack/glance-image-service.js';
import { silentLogger } from '../../../../lib/log.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import { ScriptedCloud } from '../../../support/scripted-cloud.js';

/** An access that counts its closes and remembers the settings it was made from. */
class CountingAccess implements HostAccess {
  closes = 0;
  constructor(readonly settings: DriverHost['settings']) {}
  close(): void {
    this.closes += 1;
  }
}

/** An image service that only tells which access it was made over (nothing is uploaded here). */
class AccessImageService implements ImageService {
  constructor(readonly access: CountingAccess | undefined) {}
  upload(): Promise<never> {
    return Promise.reject(new Error('not used'));
  }
  delete(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
  list(): Promise<[]> {
    return Promise.resolve([]);
  }
}

/** A driver of the test's own (the openstack config part, so real configs load) counting its accesses. */
function countingDriver(): { driver: Driver<ProviderConfig, CountingAccess>; made: CountingAccess[]; failNext: { value: boolean } } {
  const made: CountingAccess[] = [];
  const failNext = { value: false };
  const driver: Driver<ProviderConfig, CountingAccess> = {
    ...(openstackDriver as unknown as Driver<ProviderConfig>),
    hostSettings: ['cloudsFile'],
    hostAccess: (_c, host) => {
      if (failNext.value) {
        failNext.value = false;
        return Promise.reject(new Error('no credentials'));
      }
      const a = new CountingAccess(host.settings);
      made.push(a);
      return Promise.resolve(a);
    },
    imageService: (_c, access) => new AccessImageService(access),
    createProvider: (): Provider => { throw new Error('not used'); },
  };
  return { driver, made, failNext };
}

function config(cloudsFile: string, extra = ''): Config {
  return parseConfig([
    `clouds-file: ${cloudsFile}`,
    'providers:',
    '  - name: cloud-a',
    '    cloud: scripted',
    extra,
    '    pools: []',
    '',
  ].join('\n'), '/etc/nodepool/nodepool.yaml');
}

describe('driver host accesses', () => {
  it('makes one access per provider config and settings, shared by every caller, closed once', async () => {
    const { driver, made } = countingDriver();
    let current = config('/a/clouds.yaml');
    const hosts = driverHosts({ settings: () => current, env: {}, homeDir: '/nonexistent', cwd: '/nonexistent', log: silentLogger(), driverOf: () => driver });
    const pc = (): ProviderConfig => current.providers[0] as ProviderConfig;
    const [a1, a2, svc] = await Promise.all([hosts.access(pc()), hosts.access(pc()), hosts(pc())]);
    assert.equal(made.length, 1);
    assert.equal(a1, a2);
    assert.ok(svc instanceof AccessImageService);
    assert.equal(svc.access, a1);
    assert.equal(await hosts(pc()), svc, 'the image service is made once too');
    assert.deepEqual((a1 as CountingAccess).settings, { cloudsFile: '/a/clouds.yaml' }, 'only the declared settings reach the driver');

    // A config that changes nothing the provider or its driver reads keeps the access.
    current = parseConfig(`clouds-file: /a/clouds.yaml\nlabels: [{name: x}]\nproviders:\n  - name: cloud-a\n    cloud: scripted\n    pools: []\n`, '/etc/nodepool/nodepool.yaml');
    assert.equal(await hosts.access(pc()), a1);

    // Another clouds file supersedes it: a new access; the old one stays open (a stopping
    // provider or an upload may still use it) until the process closes them all, each once.
    current = config('/b/clouds.yaml');
    const b = await hosts.access(pc());
    assert.notEqual(b, a1);
    assert.equal(made.length, 2);
    assert.deepEqual(made.map((m) => m.closes), [0, 0]);
    await hosts.close();
    assert.deepEqual(made.map((m) => m.closes), [1, 1]);
    await hosts.close();
    assert.deepEqual(made.map((m) => m.closes), [1, 1], 'a second close closes nothing again');
  });

  it('keeps no failed access: the next use tries again', async () => {
    const { driver, made, failNext } = countingDriver();
    const current = config('/a/clouds.yaml');
    const hosts = driverHosts({ settings: () => current, env: {}, homeDir: '/nonexistent', cwd: '/nonexistent', log: silentLogger(), driverOf: () => driver });
    const pc = current.providers[0] as ProviderConfig;
    failNext.value = true;
    await assert.rejects(hosts(pc), /no credentials/);
    const a = await hosts.access(pc);
    assert.equal(made.length, 1);
    assert.equal(await hosts.access(pc), a);
    await hosts.close();
    assert.equal(made[0]?.closes, 1);
  });

  it('names the provider of a driver without host access', async () => {
    const current = parseConfig('providers:\n  - name: lab\n    driver: static\n    pools: []\n', '/etc/nodepool/nodepool.yaml');
    const hosts = driverHosts({ settings: () => current, env: {}, homeDir: '/nonexistent', cwd: '/nonexistent', log: silentLogger() });
    const pc = current.providers[0] as ProviderConfig;
    await assert.rejects(hosts.access(pc), /provider lab \(driver static\) has no host access/);
    await assert.rejects(hosts(pc), /provider lab \(driver static\) manages no images/);
    await hosts.close();
  });
});

describe('openstack host access', () => {
  let dir: string;
  let cloud: ScriptedCloud;
  let hosts: DriverHosts;
  let store: SqliteStore;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'driver-hosts-'));
    cloud = await ScriptedCloud.start();
    await cloud.writeCloudsYaml(path.join(dir, 'clouds.yaml'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
  });
  after(async () => {
    await hosts.close();
    await store.close();
    await cloud.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('gives the provider and its image service one Keystone session', async () => {
    const current = config(path.join(dir, 'clouds.yaml'));
    hosts = driverHosts({ settings: () => current, env: {}, homeDir: '/nonexistent', cwd: '/nonexistent', log: silentLogger() });
    const pc = current.providers[0] as ProviderConfig;
    const provider = (openstackDriver.createProvider as Driver<ProviderConfig>['createProvider'])(pc, {
      store, log: silentLogger(), clock: Date.now, config: current, sessionId: () => 's',
      hostAccess: () => hosts.access(pc),
    }) as OpenStackProvider;
    cloud.answer('GET', /^\/v2\/images(\?.*)?$/, { body: { images: [{ id: 'i1', name: 'deb', status: 'active' }] } });
    const svc = await hosts(pc);
    assert.ok(svc instanceof OpenStackImageService);
    const [viaService, viaProvider] = await Promise.all([svc.list(), provider.images?.list()]);
    assert.deepEqual(viaProvider, viaService);
    const access = await provider.access();
    assert.equal(access, svc.access);
    assert.equal((await provider.nova()) !== undefined, true);
    assert.equal(cloud.seen('POST', /^\/v3\/auth\/tokens$/).length, 1, 'one token for the provider and the image service');
    await provider.stop();
  });
});
