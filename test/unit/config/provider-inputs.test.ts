import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../lib/config/load.js';
import { providerInputs } from '../../../lib/config/provider-inputs.js';
import { configEquals } from '../../../lib/config/config-equals.js';

/** Diskimages `deb` (with `debKeys`) and `other`; provider `os` takes deb, `os2` takes other, `hosts` (static) none. */
function config(debKeys = ''): ReturnType<typeof parseConfig> {
  return parseConfig([
    'labels: [{name: small}, {name: big}, {name: s}]',
    'diskimages:',
    `  - {name: deb${debKeys}}`,
    '  - {name: other}',
    'providers:',
    '  - name: os',
    '    cloud: c',
    '    diskimages: [{name: deb}]',
    '    pools: [{name: main, labels: [{name: small, diskimage: deb, min-ram: 1}]}]',
    '  - name: os2',
    '    cloud: c',
    '    diskimages: [{name: other}]',
    '    pools: [{name: main, labels: [{name: big, diskimage: other, min-ram: 1}]}]',
    '  - name: hosts',
    '    driver: static',
    '    pools: [{name: main, nodes: [{name: h1, labels: [s]}]}]',
  ].join('\n'), 'nodepool.yaml');
}

describe('provider inputs: what a provider reads beyond its own entry', () => {
  it('names the node keys of each diskimage the provider takes, with Nodepool\'s defaults', () => {
    assert.deepEqual(providerInputs(config(), 'os').nodeKeys, { deb: { username: 'zuul', pythonPath: 'auto', shellType: null } });
    assert.deepEqual(providerInputs(config(', username: ubuntu, python-path: /usr/bin/python3, shell-type: sh'), 'os').nodeKeys,
      { deb: { username: 'ubuntu', pythonPath: '/usr/bin/python3', shellType: 'sh' } });
    assert.deepEqual(providerInputs(config(), 'hosts'), { rollouts: {}, nodeKeys: {} });
    assert.deepEqual(providerInputs(config(), 'gone'), { rollouts: {}, nodeKeys: {} });
  });

  it('changes for the providers taking a diskimage whose username, python-path or shell-type changed, and only for them', () => {
    const before = config();
    for (const keys of [', username: ubuntu', ', python-path: /usr/bin/python3', ', shell-type: sh']) {
      const after = config(keys);
      assert.equal(configEquals(providerInputs(before, 'os'), providerInputs(after, 'os')), false, keys);
      assert.equal(configEquals(providerInputs(before, 'os2'), providerInputs(after, 'os2')), true, keys);
      assert.equal(configEquals(providerInputs(before, 'hosts'), providerInputs(after, 'hosts')), true, keys);
    }
  });

  it('does not change for a diskimage key the provider does not read (a build key)', () => {
    assert.equal(configEquals(providerInputs(config(), 'os'), providerInputs(config(', rebuild-age: 3600'), 'os')), true);
  });

  it('carries the rollouts as before', () => {
    assert.equal(configEquals(providerInputs(config(), 'os'), providerInputs(config(', rollout: {canary: 10}'), 'os')), false);
  });
});
