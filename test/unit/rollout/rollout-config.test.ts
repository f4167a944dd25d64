import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../lib/config/load.js';
import { providerRollouts, rolloutSettingsFor } from '../../../lib/rollout/rollout-config.js';
import { configEquals } from '../../../lib/config/config-equals.js';
import { decisionAfterLaunch, uploadPhase } from '../../../lib/rollout/upload-phase.js';
import type { UploadRecord } from '../../../lib/store/models.js';
import { problemsOf } from '../../support/config-problems.js';

const T = 1_700_000_000_000;

/** A config with diskimages `lines` and an openstack provider `os` and a qemu provider `vms`, each taking `deb`. */
function yaml(diskimages: string[], opts: { osDeb?: string; vmsDeb?: string } = {}): string {
  return [
    'labels: [{name: small}, {name: vm}]',
    'diskimages:',
    ...diskimages,
    'providers:',
    '  - name: os',
    '    cloud: c',
    `    diskimages: [{name: deb${opts.osDeb ?? ''}}]`,
    '    pools: [{name: main, labels: [{name: small, diskimage: deb, min-ram: 1}]}]',
    '  - name: vms',
    '    driver: qemu',
    '    image-dir: /var/lib/nodepool/vm-images',
    `    diskimages: [{name: deb${opts.vmsDeb ?? ''}}]`,
    '    pools: [{name: main, labels: [{name: vm, diskimage: deb}]}]',
  ].join('\n');
}

describe('rollout: keys', () => {
  it('parses a top-level rollout with its defaults (age in ms): canary alone is a canary, promoted after 10 launches and an hour', () => {
    const c = parseConfig(yaml(['  - name: deb', '    rollout: {canary: 10}']), 'nodepool.yaml');
    const want = { canary: 10, promoteAfter: { launches: 10, ageMs: 3_600_000 }, abortOn: { launchFailures: 0 } };
    assert.deepEqual(c.diskimages[0]?.rollout, want);
    assert.deepEqual(rolloutSettingsFor(c, 'os', 'deb'), want);
    assert.deepEqual(rolloutSettingsFor(c, 'vms', 'deb'), want);
  });

  it('takes each promote-after default alone, and promotes at once only when written out as 0 and 0', () => {
    const only = (promote: string) => rolloutSettingsFor(parseConfig(yaml(['  - name: deb', `    rollout: {canary: 10, promote-after: ${promote}}`]), 'nodepool.yaml'), 'os', 'deb')?.promoteAfter;
    assert.deepEqual(only('{launches: 3}'), { launches: 3, ageMs: 3_600_000 });
    assert.deepEqual(only('{age: 60}'), { launches: 10, ageMs: 60_000 });
    assert.deepEqual(only('{}'), { launches: 10, ageMs: 3_600_000 });
    assert.deepEqual(only('{launches: 0, age: 0}'), { launches: 0, ageMs: 0 });
  });

  it('keeps a new upload under canary: {canary: N} alone is no promotion at its first launch nor before an hour', () => {
    const settings = rolloutSettingsFor(parseConfig(yaml(['  - name: deb', '    rollout: {canary: 10}']), 'nodepool.yaml'), 'os', 'deb');
    const ready = T;
    const upload = (launches: number): UploadRecord => ({
      id: '0000000002', buildId: 'deb-0000000002', diskimage: 'deb', provider: 'os', imageName: 'deb', state: 'ready',
      stateTime: ready, created: ready, externalId: 'img', externalName: null, format: 'qcow2', reason: null, progress: null, launches,
    });
    assert.equal(uploadPhase(upload(0), [], settings, ready).state, 'canary', 'just ready');
    assert.equal(decisionAfterLaunch(upload(1), [], settings, ready + 1000), undefined, 'one launch promotes nothing');
    assert.equal(decisionAfterLaunch(upload(50), [], settings, ready + 3_599_000), undefined, 'fifty launches within the hour promote nothing');
    assert.equal(decisionAfterLaunch(upload(9), [], settings, ready + 7_200_000), undefined, 'nine launches after two hours promote nothing');
    assert.equal(decisionAfterLaunch(upload(10), [], settings, ready + 3_600_000)?.state, 'promoted', 'ten launches and an hour promote it');
  });

  it('parses every key', () => {
    const c = parseConfig(yaml(['  - name: deb', '    rollout: {canary: 25, promote-after: {launches: 20, age: 3600}, abort-on: {launch-failures: 3}}']), 'nodepool.yaml');
    assert.deepEqual(rolloutSettingsFor(c, 'os', 'deb'), { canary: 25, promoteAfter: { launches: 20, ageMs: 3_600_000 }, abortOn: { launchFailures: 3 } });
  });

  it('has none when no rollout is written', () => {
    const c = parseConfig(yaml(['  - name: deb']), 'nodepool.yaml');
    assert.equal(c.diskimages[0]?.rollout, undefined);
    assert.equal(rolloutSettingsFor(c, 'os', 'deb'), undefined);
    assert.equal(rolloutSettingsFor(c, 'nowhere', 'nothing'), undefined);
    assert.deepEqual(providerRollouts(c, 'os'), { deb: null });
  });

  it('reports bad values with the file and the key path', () => {
    assert.deepEqual(problemsOf(yaml([
      '  - name: deb',
      '    rollout: {promote-after: {launches: -1, age: soon}, abort-on: {launch-failures: 1.5}}',
      '  - name: two',
      '    rollout: {canary: 0, colour: red}',
      '  - name: three',
      '    rollout: {canary: 101, promote-after: 5}',
      '  - name: four',
      '    rollout:',
    ])), [
      'nodepool.yaml: diskimages[0].rollout.canary: expected integer from 1 to 100, got nothing (required)',
      'nodepool.yaml: diskimages[0].rollout.promote-after.launches: expected integer >= 0, got -1',
      'nodepool.yaml: diskimages[0].rollout.promote-after.age: expected integer >= 0, got "soon"',
      'nodepool.yaml: diskimages[0].rollout.abort-on.launch-failures: expected integer >= 0, got 1.5',
      'nodepool.yaml: diskimages[1].rollout.canary: expected integer from 1 to 100, got 0',
      'nodepool.yaml: diskimages[1].rollout.colour: unknown key (known keys: canary, promote-after, abort-on, promote-window)',
      'nodepool.yaml: diskimages[2].rollout.canary: expected integer from 1 to 100, got 101',
      'nodepool.yaml: diskimages[2].rollout.promote-after: expected a mapping, got 5',
      'nodepool.yaml: diskimages[3].rollout: expected a mapping, got an empty value (leave the key out for the default)',
    ]);
  });

  it('reports bad provider diskimage rollouts at their path, for openstack and qemu', () => {
    assert.deepEqual(problemsOf(yaml(['  - name: deb'], { osDeb: ', rollout: {canary: 50, abort-on: {launch-failures: -2}}', vmsDeb: ', rollout: {promote-after: {age: 60}}' })), [
      'nodepool.yaml: providers[0].diskimages[0].rollout.abort-on.launch-failures: expected integer >= 0, got -2',
      'nodepool.yaml: providers[1].diskimages[0].rollout.canary: expected integer from 1 to 100, got nothing (required)',
    ]);
  });
});

describe('rollout: inheritance and precedence', () => {
  it('is inherited through parent, replaced as a whole by a child\'s own', () => {
    const c = parseConfig(yaml([
      '  - name: base',
      '    abstract: true',
      '    rollout: {canary: 10, promote-after: {launches: 5}}',
      '  - name: mid',
      '    parent: base',
      '  - name: deb',
      '    parent: mid',
      '  - name: own',
      '    parent: base',
      '    rollout: {canary: 30}',
    ]), 'nodepool.yaml');
    const byName = new Map(c.diskimages.map((d) => [d.name, d.rollout]));
    assert.deepEqual(byName.get('deb'), { canary: 10, promoteAfter: { launches: 5, ageMs: 3_600_000 }, abortOn: { launchFailures: 0 } });
    assert.deepEqual(byName.get('mid'), byName.get('deb'));
    assert.deepEqual(byName.get('own'), { canary: 30, promoteAfter: { launches: 10, ageMs: 3_600_000 }, abortOn: { launchFailures: 0 } });
    assert.equal(byName.has('base'), false, 'abstract parents are not in the result');
  });

  it('reports an inherited entry\'s problem once, at the parent that wrote it', () => {
    assert.deepEqual(problemsOf(yaml(['  - name: base', '    abstract: true', '    rollout: {canary: 200}', '  - name: deb', '    parent: base'])), [
      'nodepool.yaml: diskimages[0].rollout.canary: expected integer from 1 to 100, got 200',
    ]);
  });

  it('takes a provider diskimage\'s rollout over the top-level one, per provider', () => {
    const c = parseConfig(yaml(['  - name: deb', '    rollout: {canary: 10}'], { osDeb: ', rollout: {canary: 50, abort-on: {launch-failures: 2}}' }), 'nodepool.yaml');
    assert.deepEqual(rolloutSettingsFor(c, 'os', 'deb'), { canary: 50, promoteAfter: { launches: 10, ageMs: 3_600_000 }, abortOn: { launchFailures: 2 } });
    assert.equal(rolloutSettingsFor(c, 'vms', 'deb')?.canary, 10, 'the qemu provider has none of its own: the top-level one holds');
  });

  it('gives a provider diskimage\'s rollout even without a top-level one (qemu)', () => {
    const c = parseConfig(yaml(['  - name: deb'], { vmsDeb: ', rollout: {canary: 5}' }), 'nodepool.yaml');
    assert.equal(rolloutSettingsFor(c, 'vms', 'deb')?.canary, 5);
    assert.equal(rolloutSettingsFor(c, 'os', 'deb'), undefined);
  });
});

describe('rollout: reload equality', () => {
  const provider = (c: ReturnType<typeof parseConfig>, name: string) => c.providers.find((p) => p.name === name);

  it('a provider diskimage\'s rollout change changes the provider\'s config', () => {
    const a = parseConfig(yaml(['  - name: deb'], { osDeb: ', rollout: {canary: 10}' }), 'nodepool.yaml');
    const b = parseConfig(yaml(['  - name: deb'], { osDeb: ', rollout: {canary: 20}' }), 'nodepool.yaml');
    const same = parseConfig(yaml(['  - name: deb'], { osDeb: ', rollout: {canary: 10}' }), 'nodepool.yaml');
    assert.equal(configEquals(provider(a, 'os'), provider(b, 'os')), false);
    assert.equal(configEquals(provider(a, 'os'), provider(same, 'os')), true);
    assert.equal(configEquals(provider(a, 'vms'), provider(b, 'vms')), true, 'the other provider is unchanged');
  });

  it('a top-level rollout change changes the rollouts of the providers it applies to, not of one with its own', () => {
    const a = parseConfig(yaml(['  - name: deb', '    rollout: {canary: 10}'], { osDeb: ', rollout: {canary: 50}' }), 'nodepool.yaml');
    const b = parseConfig(yaml(['  - name: deb', '    rollout: {canary: 10, promote-after: {age: 60}}'], { osDeb: ', rollout: {canary: 50}' }), 'nodepool.yaml');
    assert.equal(configEquals(providerRollouts(a, 'vms'), providerRollouts(b, 'vms')), false);
    assert.equal(configEquals(providerRollouts(a, 'os'), providerRollouts(b, 'os')), true);
    assert.equal(configEquals(provider(a, 'vms'), provider(b, 'vms')), true, 'the provider entry alone does not show it');
  });
});
