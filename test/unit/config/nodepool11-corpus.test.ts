/**
 * The Nodepool 11 corpus (test/fixtures/nodepool11/): each file validates with the loader
 * every process uses, and the keys lib/config owns compile as Nodepool 11 reads them:
 * inheritance, defaults, `%(NODEPOOL_…)`, the secure file, tenant limits, warnings.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { configSecrets, loadConfig } from '../../../lib/config/load.js';
import { checkGearmanServers, imageLifecycleMode } from '../../../lib/config/gearman-servers.js';
import type { Config, DiskimageConfig } from '../../../lib/config/schema.js';
import { configValidate } from '../../../cli/commands/config-validate.js';
import { ConfigError } from '../../../lib/errors.js';

const DIR = 'test/fixtures/nodepool11';
const ENV = { NODEPOOL_MIRROR_HOST: 'mirror.dfw.example.org', NODEPOOL_REG_TOKEN: 'tok-12345', HOME: '/nonexistent' };
const builder = (opts: { secure?: boolean } = { secure: true }): Config =>
  loadConfig(`${DIR}/builder.yaml`, { env: ENV, ...(opts.secure ? { secureFile: `${DIR}/secure.yaml` } : {}) });
const image = (c: Config, name: string): DiskimageConfig => {
  const d = c.diskimages.find((x) => x.name === name);
  assert.ok(d, `diskimage ${name}`);
  return d;
};
const BASE_ELEMENTS = ['nodepool-base', 'vm', 'simple-init', 'growroot', 'infra-package-needs', 'zuul-worker'];

describe('Nodepool 11 corpus: builder file', () => {
  it('builds only non-abstract images, a non-abstract parent as well as its child, in file order', () => {
    assert.deepEqual(builder().diskimages.map((d) => d.name), ['ubuntu-jammy', 'ubuntu-noble', 'debian-bookworm', 'debian-bookworm-arm64']);
  });

  it('appends elements root first and updates env-vars along the chain, with %(NODEPOOL_…) substituted', () => {
    const jammy = image(builder({ secure: false }), 'ubuntu-jammy');
    assert.deepEqual(jammy.elements, [...BASE_ELEMENTS, 'ubuntu-minimal']);
    assert.equal(jammy.envVars.DIB_MIRROR_HOST, 'mirror.dfw.example.org');
    assert.equal(jammy.envVars.DIB_DISTRIBUTION_MIRROR, 'http://mirror.dfw.example.org/ubuntu');
    assert.equal(jammy.envVars.TMPDIR, '/opt/dib_tmp', 'inherited from base through ubuntu-base');
    assert.equal(image(builder(), 'ubuntu-noble').envVars.DIB_CHECKSUM, '0', 'the child key wins');
    const arm = image(builder(), 'debian-bookworm-arm64');
    assert.deepEqual(arm.elements, [...BASE_ELEMENTS, 'debian-minimal'], 'a child without elements keeps its chain\'s');
    assert.equal(arm.envVars.DIB_DISTRIBUTION_MIRROR, 'http://mirror.dfw.example.org/debian');
  });

  it('overrides Nodepool\'s keys only when truthy, delete-after-upload whenever present, and never inherits metadata', () => {
    const c = builder();
    const jammy = image(c, 'ubuntu-jammy');
    assert.equal(jammy.pythonPath, '/usr/bin/python3', 'from ubuntu-base');
    assert.deepEqual(jammy.formats, ['qcow2', 'raw', 'vhd'], 'from base');
    assert.equal(jammy.release, 'jammy');
    assert.equal(jammy.deleteAfterUpload, true);
    assert.deepEqual(jammy.keepFormats, ['qcow2']);
    assert.deepEqual(jammy.metadata, { os_distro: 'ubuntu', os_version: '22.04' }, 'its own only; scalars become strings');
    assert.equal(jammy.parent, 'ubuntu-base');
    const noble = image(c, 'ubuntu-noble');
    assert.deepEqual(noble.metadata, {}, 'base has metadata; Nodepool does not inherit it');
    assert.equal(noble.rebuildAge, 43200);
    assert.equal(noble.deleteAfterUpload, false, 'default');
    assert.equal(noble.shellType, undefined);
    const debian = image(c, 'debian-bookworm');
    assert.equal(debian.pythonPath, 'auto', 'default: Ansible discovers the interpreter');
    assert.equal(debian.username, 'zuul');
    assert.equal(debian.shellType, 'bash');
    assert.equal(debian.buildTimeout, 14400);
    const arm = image(c, 'debian-bookworm-arm64');
    assert.equal(arm.deleteAfterUpload, false, 'an explicit false overrides the parent\'s true');
    assert.equal(arm.shellType, 'bash', 'inherited from the non-abstract parent');
    assert.equal(arm.release, 'bookworm');
    assert.equal(arm.buildTimeout, 14400);
    assert.deepEqual(arm.formats, ['raw']);
    assert.equal(arm.dibCmd, '/opt/dib/bin/disk-image-create');
    assert.equal(arm.rebuildAge, 86400);
  });

  it('merges the secure file: its zookeeper-servers replace the list (2281 with TLS), its env-vars update after inheritance', () => {
    const plain = builder({ secure: false });
    assert.deepEqual(plain.zookeeperServers.map((s) => `${s.host}:${s.port}`), ['zk01.example.org:2281', 'zk02.example.org:2281', 'zk03.example.org:2281']);
    assert.equal(plain.zookeeperTimeout, 30);
    const c = builder();
    assert.equal(c.secureFile, `${DIR}/secure.yaml`);
    assert.deepEqual(c.zookeeperServers.map((s) => `${s.host}:${s.port}`), ['zk-secure01.example.org:2281', 'zk-secure02.example.org:2282']);
    assert.equal(c.zookeeperTls?.ca, '/etc/nodepool/secure-certs/cacert.pem');
    const jammy = image(c, 'ubuntu-jammy');
    assert.equal(jammy.envVars.REG_PASSWORD, 'jammy-secret-tok-12345');
    assert.equal(jammy.envVars.DIB_CHECKSUM, '0', 'the secure value wins over the inherited one');
    assert.equal(image(c, 'debian-bookworm-arm64').envVars.ARCH, 'aarch64');
    assert.equal(image(c, 'ubuntu-noble').envVars.REG_PASSWORD, undefined, 'secure env-vars are per image, after inheritance');
    assert.ok(configSecrets(c).includes('jammy-secret-tok-12345'), 'secure env-vars are secrets for bin/ to register');
    assert.ok(!configSecrets(c).includes('mirror.dfw.example.org'), 'a plain substitution is not');
  });

  it('validates for config-validate, with the lifecycle noted, and is refused by the builder rule (no gearman-servers)', async () => {
    const r = await configValidate(`${DIR}/builder.yaml`, { env: ENV, secureFile: `${DIR}/secure.yaml` });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, `${DIR}/builder.yaml: valid (4 diskimages, 2 providers, 4 labels; image lifecycle off (launcher-only: no gearman-servers))\n`);
    assert.equal(r.stderr, '');
    assert.throws(() => checkGearmanServers(builder(), { forBuilder: true }), ConfigError);
  });

  it('names an unset NODEPOOL_ variable with its key path (Nodepool would keep the text)', () => {
    assert.throws(() => loadConfig(`${DIR}/builder.yaml`, { env: {} }), (err: unknown) => err instanceof ConfigError
      && err.message.includes(`${DIR}/builder.yaml: diskimages[0].env-vars.DIB_MIRROR_HOST: %(NODEPOOL_MIRROR_HOST) names an environment variable that is not set`));
    assert.throws(() => loadConfig(`${DIR}/builder.yaml`, { env: { NODEPOOL_MIRROR_HOST: 'm' }, secureFile: `${DIR}/secure.yaml` }),
      (err: unknown) => err instanceof ConfigError && err.file === `${DIR}/secure.yaml` && /diskimages\[0\]\.env-vars\.REG_PASSWORD: %\(NODEPOOL_REG_TOKEN\)/.test(err.message)
        && !err.message.includes('jammy-secret'));
  });
});

describe('Nodepool 11 corpus: launcher file', () => {
  const launcher = (): Config => loadConfig(`${DIR}/launcher.yaml`, { env: ENV });

  it('validates: launcher-only, Nodepool\'s webapp spelling, ZooKeeper ports with TLS', async () => {
    const c = launcher();
    assert.equal(imageLifecycleMode(c), 'off (launcher-only: no gearman-servers)');
    checkGearmanServers(c);
    assert.deepEqual(c.webapp, { port: 8005, listenAddress: '127.0.0.1', auth: [], tls: undefined });
    assert.deepEqual(c.zookeeperServers.map((s) => s.port), [2281, 2281, 2281]);
    assert.equal(c.zookeeperTimeout, 10);
    assert.equal(c.maxHoldAge, 86400);
    assert.deepEqual(c.diskimages.map((d) => [d.name, d.pythonPath, d.username]), [
      ['ubuntu-jammy', 'auto', 'zuul'], ['ubuntu-noble', 'auto', 'zuul'], ['debian-bookworm', 'auto', 'zuul'],
    ]);
    const r = await configValidate(`${DIR}/launcher.yaml`, { env: ENV });
    assert.equal(r.exitCode, 0, r.stderr);
  });

  it('compiles tenant-resource-limits: Nodepool\'s resource names, other keys verbatim, absent ones unlimited', () => {
    assert.deepEqual(launcher().tenantResourceLimits, [
      { tenantName: 'openstack', limits: { instances: 200, cores: 1600, ram: 3200000 } },
      { tenantName: 'starlingx', limits: { instances: 10, volumes: 20, 'volume-gb': 1000, 'L-43DA4232': 224 } },
      { tenantName: 'zuul', limits: {} },
    ]);
  });

  it('skips the providers of drivers this program lacks, with a warning naming each, and runs the rest', async () => {
    const c = launcher();
    assert.deepEqual(c.providers.map((p) => `${p.name}:${p.driver}`), ['rax-dfw:openstack', 'ovh-bhs1:openstack', 'static-lab:static']);
    const lab = c.providers[2];
    assert.ok(lab?.driver === 'static');
    assert.deepEqual(lab.pools[0]?.nodes.map((n) => n.hostKey.length), [0, 2, 1], 'host-key as a list or a string');
    const skipped = c.warnings.filter((w) => w.path.endsWith('.driver')).map((w) => w.path);
    assert.deepEqual(skipped, ['providers[3].driver', 'providers[4].driver']);
    const r = await configValidate(`${DIR}/launcher.yaml`, { env: ENV });
    assert.match(r.stderr, /^warning: test\/fixtures\/nodepool11\/launcher\.yaml: providers\[3\]\.driver: Nodepool's driver "kubernetes" is not supported here \(provider k8s-pods\): this provider is skipped \(not run\)/m);
    assert.match(r.stderr, /providers\[4\]\.driver: Nodepool's driver "aws"/);
  });

  it('warns about the deprecated nodepool-id, never silently', () => {
    const w = launcher().warnings.find((x) => x.path === 'providers[0].nodepool-id');
    assert.ok(w, `warnings: ${JSON.stringify(launcher().warnings.map((x) => x.path))}`);
    assert.match(w.message, /deprecated/);
  });
});
