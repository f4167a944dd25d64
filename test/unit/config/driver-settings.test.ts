import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { parseConfig } from '../../../lib/config/load.js';
import { DRIVER_SETTING_PATHS, driverConfigs, driverSettingFields } from '../../../lib/drivers/config-registry.js';
import { problemsOf } from '../../support/config-problems.js';

describe('top-level keys drivers declare', () => {
  it('takes clouds-file from the openstack driver, through the config registry', () => {
    assert.deepEqual(Object.keys(driverConfigs.openstack.settings.fields), ['clouds-file']);
    assert.deepEqual(Object.keys(driverSettingFields), ['clouds-file']);
    assert.deepEqual(DRIVER_SETTING_PATHS, ['clouds-file']);
    assert.equal(driverConfigs.static.settings, undefined);
    assert.equal(driverConfigs.qemu.settings, undefined);
  });

  it('loads clouds-file as cloudsFile, relative to the config file like core paths', () => {
    const c = parseConfig('clouds-file: secrets/clouds.yaml\nimages-dir: imgs\n', '/etc/nodepool/nodepool.yaml');
    assert.equal(c.cloudsFile, '/etc/nodepool/secrets/clouds.yaml');
    assert.equal(c.imagesDir, '/etc/nodepool/imgs');
    assert.equal(parseConfig('clouds-file: /abs/clouds.yaml\n', 'rel/nodepool.yaml').cloudsFile, '/abs/clouds.yaml');
    const none = parseConfig('labels: []\n', 'nodepool.yaml');
    assert.equal(none.cloudsFile, undefined);
    assert.ok('cloudsFile' in none, 'the key is there, unset, as before');
    assert.ok(path.isAbsolute(parseConfig('clouds-file: c.yaml\n', 'nodepool.yaml').cloudsFile ?? ''));
  });

  it('checks a driver-declared key like a core one', () => {
    assert.deepEqual(problemsOf('clouds-file: [a]\n'), [
      'nodepool.yaml: clouds-file: expected a string, got a list',
    ]);
  });
});
