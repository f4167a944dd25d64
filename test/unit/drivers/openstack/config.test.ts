import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../../lib/config/load.js';
import { formatHostname, type OpenStackProviderConfig } from '../../../../lib/drivers/openstack/config.js';
import { openstackDriver } from '../../../../lib/drivers/openstack/index.js';
import { ConfigError } from '../../../../lib/errors.js';

const HEAD = ['labels: [{name: small}, {name: tiny}]', 'diskimages: [{name: deb}]', 'providers:'];

function provider(lines: string[]): OpenStackProviderConfig {
  const c = parseConfig([...HEAD, ...lines].join('\n'), 'nodepool.yaml');
  const p = c.providers[0];
  assert.equal(p?.driver, 'openstack');
  return p as OpenStackProviderConfig;
}

function problems(lines: string[]): string[] {
  try {
    parseConfig([...HEAD, ...lines].join('\n'), 'nodepool.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message.split('\n');
  }
  assert.fail('expected the config to be rejected');
}

describe('openstack provider config', () => {
  it('applies the defaults', () => {
    const p = provider([
      '  - name: p1',
      '    cloud: c1',
      '    diskimages: [{name: deb}]',
      '    cloud-images: [{name: cirros}]',
      '    pools:',
      '      - name: main',
      '        labels: [{name: small, diskimage: deb, min-ram: 1024}]',
    ]);
    assert.equal(p.maxConcurrency, -1);
    assert.equal(p.bootTimeout, 60);
    assert.equal(p.launchTimeout, 3600);
    assert.equal(p.launchRetries, 3);
    assert.equal(p.hostnameFormat, '{label.name}-{provider.name}-{node.id}');
    assert.equal(p.imageNameFormat, '{image_name}-{timestamp}');
    assert.equal(p.rate, 0);
    assert.equal(p.portCleanupInterval, 600);
    assert.equal(p.cleanFloatingIps, false);
    assert.equal('nodepoolId' in p, false);
    assert.deepEqual(p.diskimages[0], { name: 'deb', pause: false, meta: {}, configDrive: true, username: undefined, connectionType: 'ssh', connectionPort: 22, validate: undefined, rollout: undefined });
    assert.deepEqual(p.cloudImages[0], {
      name: 'cirros', imageId: undefined, imageName: undefined, username: undefined, configDrive: undefined, connectionType: 'ssh', connectionPort: 22,
      pythonPath: 'auto', shellType: undefined,
    });
    const pool = p.pools[0];
    assert.equal(pool?.maxServers, Number.MAX_SAFE_INTEGER);
    assert.equal(pool?.maxCores, undefined);
    assert.equal(pool?.ignoreProviderQuota, false);
    assert.equal(pool?.hostKeyChecking, true);
    assert.deepEqual([pool?.networks, pool?.securityGroups, pool?.availabilityZones], [[], [], []]);
    const label = pool?.labels[0];
    assert.equal(label?.bootFromVolume, false);
    assert.equal(label?.volumeSize, 50);
    assert.equal(label?.consoleLog, false);
    assert.deepEqual(label?.instanceProperties, {});
    assert.deepEqual(label?.dynamicInstanceProperties, {});
    assert.equal(label?.userdata, undefined);
    assert.deepEqual([label?.networks, label?.hostKeyChecking], [[], true], 'the pool\'s networks and host-key-checking');
    assert.equal(pool?.autoFloatingIp, true);
    assert.deepEqual([pool?.maxVolumes, pool?.maxVolumeGb], [undefined, undefined]);
    assert.deepEqual(openstackDriver.imageTargets?.(p), [{ diskimage: 'deb', format: 'qcow2', pause: false, meta: {}, nameFormat: '{image_name}-{timestamp}', uploadTimeout: 3600, validate: null, postUploadHook: null, rollout: null }]);
    assert.deepEqual(openstackDriver.pools(p), [{ name: 'main', maxServers: Number.MAX_SAFE_INTEGER, labels: ['small'], nodeAttributes: {} }]);
  });

  it('defaults the winrm port to 5986', () => {
    const p = provider(['  - {name: p1, cloud: c1, cloud-images: [{name: win, image-id: x, connection-type: winrm}, {name: w2, connection-type: winrm, connection-port: 5985}]}']);
    assert.deepEqual(p.cloudImages.map((c) => c.connectionPort), [5986, 5985]);
    assert.deepEqual(openstackDriver.imageTargets?.(p), []);
  });

  it('takes a pool host-key-checking from the provider-level key unless the pool sets its own', () => {
    const p = provider([
      '  - name: p1',
      '    cloud: c1',
      '    host-key-checking: false',
      '    cloud-images: [{name: cirros}]',
      '    pools:',
      '      - {name: a, labels: [{name: small, cloud-image: cirros, flavor-name: m1.tiny}]}',
      '      - {name: b, host-key-checking: true, labels: [{name: small, cloud-image: cirros, flavor-name: m1.tiny}]}',
    ]);
    assert.deepEqual(p.pools.map((x) => x.hostKeyChecking), [false, true]);
  });

  it('reads pool quota keys, networks and label extras', () => {
    const p = provider([
      '  - name: p1',
      '    cloud: c1',
      '    region-name: RegionOne',
      '    rate: 0.5',
      '    cloud-images: [{name: cirros, image-name: cirros-0.6}]',
      '    pools:',
      '      - name: main',
      '        max-servers: 2',
      '        max-cores: 8',
      '        max-ram: 8192',
      '        ignore-provider-quota: true',
      '        availability-zones: [az1, az2]',
      '        networks: [private]',
      '        security-groups: [default]',
      '        node-attributes: {team: ci}',
      '        labels:',
      '          - {name: tiny, cloud-image: cirros, flavor-name: m1.tiny, key-name: k, userdata: "#!/bin/sh", instance-properties: {owner: ci, n: 3}}',
    ]);
    const pool = p.pools[0];
    assert.deepEqual([pool?.maxServers, pool?.maxCores, pool?.maxRam, pool?.ignoreProviderQuota], [2, 8, 8192, true]);
    assert.deepEqual(pool?.labels[0]?.instanceProperties, { owner: 'ci', n: '3' });
    assert.equal(p.rate, 0.5);
    assert.deepEqual(openstackDriver.pools(p)[0]?.nodeAttributes, { team: 'ci' });
  });

  it('checks labels: diskimage xor cloud-image, both listed, and min-ram or flavor-name', () => {
    const lines = problems([
      '  - name: p1',
      '    cloud: c1',
      '    cloud-images: [{name: cirros}]',
      '    pools:',
      '      - name: main',
      '        labels:',
      '          - {name: small, min-ram: 1}',
      '          - {name: tiny, diskimage: deb, cloud-image: nope}',
    ]);
    assert.deepEqual(lines, [
      'nodepool.yaml: providers[0].pools[0].labels[0]: expected diskimage or cloud-image, got neither',
      'nodepool.yaml: providers[0].pools[0].labels[1]: expected diskimage or cloud-image, got both',
      'nodepool.yaml: providers[0].pools[0].labels[1].diskimage: diskimage "deb" is not listed in providers[0].diskimages',
      'nodepool.yaml: providers[0].pools[0].labels[1].cloud-image: cloud-image "nope" is not listed in providers[0].cloud-images',
      'nodepool.yaml: providers[0].pools[0].labels[1]: expected min-ram or flavor-name, got neither',
    ]);
  });

  it('rejects image-id with image-name, unknown hostname placeholders and zero launch-retries', () => {
    const lines = problems([
      '  - name: p1',
      '    cloud: c1',
      '    launch-retries: 0',
      '    hostname-format: "{label.name}-{node.uuid}"',
      '    cloud-images: [{name: cirros, image-id: a, image-name: b}]',
    ]);
    assert.deepEqual(lines, [
      'nodepool.yaml: providers[0].launch-retries: expected integer >= 1, got 0',
    ]);
    const later = problems(['  - {name: p1, cloud: c1, hostname-format: "{label.name}-{node.uuid}", cloud-images: [{name: cirros, image-id: a, image-name: b}]}']);
    assert.deepEqual(later, [
      'nodepool.yaml: providers[0].hostname-format: unknown placeholder {node.uuid} (known: {label.name}, {provider.name}, {node.id}, {pool.name})',
      'nodepool.yaml: providers[0].cloud-images[0]: expected image-id or image-name, got both',
    ]);
  });

  it('fills hostname-format', () => {
    assert.equal(formatHostname('{label.name}-{provider.name}-{node.id}', { label: 'small', provider: 'p1', node: '0000000042', pool: 'main' }), 'small-p1-0000000042');
    assert.equal(formatHostname('{pool.name}/{x}', { label: 'l', provider: 'p', node: '1', pool: 'main' }), 'main/{x}');
  });
});
