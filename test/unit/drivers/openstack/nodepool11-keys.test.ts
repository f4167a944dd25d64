/**
 * The Nodepool 11 openstack keys of issue 21 validate with Nodepool's defaults and resolve as
 * Nodepool resolves them (label `networks` and `host-key-checking` fall back to the pool's).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../../lib/config/load.js';
import type { OpenStackProviderConfig } from '../../../../lib/drivers/openstack/config.js';
import { ConfigError } from '../../../../lib/errors.js';

const HEAD = ['labels: [{name: a}, {name: b}, {name: c}]', 'diskimages: [{name: deb}]', 'providers:'];

const NODEPOOL11_PROVIDER = [
  '  - name: rax',
  '    cloud: c1',
  '    nodepool-id: legacy',
  '    port-cleanup-interval: 0',
  '    diskimages: [{name: deb}]',
  '    cloud-images:',
  '      - {name: win, image-name: Windows, python-path: /usr/bin/python3, shell-type: cmd, username: Administrator, connection-type: winrm, connection-port: 5985}',
  '    pools:',
  '      - name: main',
  '        auto-floating-ip: false',
  '        max-volumes: 4',
  '        max-volume-gb: 200',
  '        host-key-checking: false',
  '        networks: [private]',
  '        security-groups: [default]',
  '        labels:',
  '          - name: a',
  '            diskimage: deb',
  '            flavor-name: m1.tiny',
  '            networks: [public, private]',
  '            host-key-checking: true',
  '            boot-from-volume: true',
  '            volume-size: 80',
  '            console-log: true',
  '            userdata: "#cloud-config"',
  '            instance-properties: {team: ci}',
  '            dynamic-instance-properties: {tenant: "{request.tenant_name}", job: "{request.requestor_data[job_name]}"}',
  '          - {name: b, cloud-image: win, min-ram: 1024}',
];

function parse(lines: string[]): OpenStackProviderConfig {
  const c = parseConfig([...HEAD, ...lines].join('\n'), 'nodepool.yaml');
  return c.providers[0] as OpenStackProviderConfig;
}

function problems(lines: string[]): string[] {
  try {
    parse(lines);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(err.message, /^nodepool\.yaml: /m, 'the file is named');
    return err.problems.map((p) => `${p.path}: ${p.message}`).sort();
  }
  assert.fail('expected the config to be rejected');
}

describe('openstack provider: Nodepool 11 keys', () => {
  it('reads every Nodepool 11 key of a provider, pool and label', () => {
    const p = parse(NODEPOOL11_PROVIDER);
    assert.equal('nodepoolId' in p, false, 'nodepool-id is accepted with a warning (config.warnings) and not kept');
    assert.equal(p.portCleanupInterval, 0);
    assert.deepEqual(p.cloudImages[0], {
      name: 'win', imageId: undefined, imageName: 'Windows', username: 'Administrator', configDrive: undefined,
      pythonPath: '/usr/bin/python3', shellType: 'cmd', connectionType: 'winrm', connectionPort: 5985,
    });
    const pool = p.pools[0];
    assert.deepEqual([pool?.autoFloatingIp, pool?.maxVolumes, pool?.maxVolumeGb, pool?.hostKeyChecking, pool?.networks, pool?.securityGroups],
      [false, 4, 200, false, ['private'], ['default']]);
    const [a, b] = pool?.labels ?? [];
    assert.deepEqual(a && {
      networks: a.networks, hostKeyChecking: a.hostKeyChecking, bootFromVolume: a.bootFromVolume, volumeSize: a.volumeSize,
      consoleLog: a.consoleLog, userdata: a.userdata, instanceProperties: a.instanceProperties, dynamic: a.dynamicInstanceProperties,
    }, {
      networks: ['public', 'private'], hostKeyChecking: true, bootFromVolume: true, volumeSize: 80, consoleLog: true, userdata: '#cloud-config',
      instanceProperties: { team: 'ci' }, dynamic: { tenant: '{request.tenant_name}', job: '{request.requestor_data[job_name]}' },
    });
    assert.deepEqual([b?.networks, b?.hostKeyChecking, b?.volumeSize], [['private'], false, 50], 'label b takes the pool\'s networks and host-key-checking');
  });

  it('names the file and key path of each wrong Nodepool 11 key', () => {
    const lines = problems([
      '  - name: p1',
      '    cloud: c1',
      '    port-cleanup-interval: -1',
      '    cloud-images: [{name: x, python-path: 3}]',
      '    pools:',
      '      - name: main',
      '        auto-floating-ip: "yes"',
      '        max-volumes: many',
      '        max-volume-gb: -5',
      '        labels: [{name: a, cloud-image: x, flavor-name: f, networks: private, host-key-checking: 1, dynamic-instance-properties: [a]}]',
    ]);
    assert.deepEqual(lines, [
      'providers[0].port-cleanup-interval: expected integer >= 0, got -1',
      'providers[0].cloud-images[0].python-path: expected a string, got 3',
      'providers[0].pools[0].auto-floating-ip: expected true or false, got "yes"',
      'providers[0].pools[0].max-volumes: expected integer >= 0, got "many"',
      'providers[0].pools[0].max-volume-gb: expected integer >= 0, got -5',
      'providers[0].pools[0].labels[0].dynamic-instance-properties: expected a mapping of a string or number, got a list',
      'providers[0].pools[0].labels[0].networks: expected a list of a string, got "private"',
      'providers[0].pools[0].labels[0].host-key-checking: expected true or false, got 1',
    ].sort());
  });
});
