import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../lib/config/load.js';
import { inPromoteWindow } from '../../../lib/rollout/promote-window-policy.js';
import { rolloutSettingsFor } from '../../../lib/rollout/rollout-config.js';
import { decisionAfterLaunch, uploadPhase } from '../../../lib/rollout/upload-phase.js';
import type { RolloutSettings } from '../../../lib/rollout/rollout-policy.js';
import type { UploadRecord } from '../../../lib/store/models.js';
import { problemsOf } from '../../support/config-problems.js';

/** 2024-01-01 00:00 UTC, and an hour. */
const MIDNIGHT = Date.UTC(2024, 0, 1);
const HOUR = 3_600_000;
const at = (h: number, m = 0): number => MIDNIGHT + h * HOUR + m * 60_000;

const upload = (over: Partial<UploadRecord> = {}): UploadRecord => ({
  id: '0000000002', buildId: 'deb-0000000002', diskimage: 'deb', provider: 'vms', imageName: 'deb', state: 'ready',
  stateTime: MIDNIGHT, created: MIDNIGHT, externalId: 'img', externalName: null, format: 'qcow2', reason: null, progress: null, ...over,
});
/** A canary promoted after 5 launches and no age, only between 09:00 and 17:00 UTC. */
const settings: RolloutSettings = { canary: 10, promoteAfter: { launches: 5, ageMs: 0 }, abortOn: { launchFailures: 2 }, promoteWindow: { fromHour: 9, toHour: 17 } };

describe('promote-window: the hours a canary may be promoted in', () => {
  it('takes [from, to) in UTC hours', () => {
    const w = { fromHour: 9, toHour: 17 };
    assert.deepEqual([at(8, 59), at(9), at(16, 59), at(17)].map((t) => inPromoteWindow(w, t)), [false, true, true, false]);
  });

  it('wraps midnight when to is before from', () => {
    const w = { fromHour: 22, toHour: 6 };
    assert.deepEqual([at(21, 59), at(22), at(23, 30), at(0), at(5, 59), at(6), at(12)].map((t) => inPromoteWindow(w, t)),
      [false, true, true, true, true, false, false]);
  });
});

describe('promote-window: the canary it holds back', () => {
  it('keeps a canary that reached promote-after a canary outside the window, and decides nothing', () => {
    const u = upload({ launches: 9 });
    assert.equal(uploadPhase(u, [], settings, at(18)).state, 'canary');
    assert.equal(decisionAfterLaunch(u, [], settings, at(18)), undefined);
  });

  it('promotes it at the first launch counted inside the window, with the canary\'s words', () => {
    assert.deepEqual(decisionAfterLaunch(upload({ launches: 9 }), [], settings, at(9, 30)), { state: 'promoted', time: at(9, 30), reason: 'after 9 launches' });
  });

  it('does not promote inside the window before promote-after is reached', () => {
    assert.equal(uploadPhase(upload({ launches: 4 }), [], settings, at(10)).state, 'canary');
  });

  it('never holds back an abort: abort-on revokes outside the window', () => {
    assert.equal(decisionAfterLaunch(upload({ launches: 9, launchFailures: 2 }), [], settings, at(3))?.state, 'revoked');
  });

  it('limits nothing without the key', () => {
    const { promoteWindow: _, ...always } = settings;
    assert.equal(uploadPhase(upload({ launches: 5 }), [], always, at(3)).state, 'promoted');
  });
});

describe('promote-window: the key', () => {
  const yaml = (rollout: string): string => [
    'labels: [{name: vm}]',
    'diskimages:',
    '  - name: deb',
    `    rollout: ${rollout}`,
    'providers:',
    '  - name: vms',
    '    driver: qemu',
    '    image-dir: /var/lib/nodepool/vm-images',
    '    diskimages: [{name: deb}]',
    '    pools: [{name: main, labels: [{name: vm, diskimage: deb}]}]',
  ].join('\n');

  it('parses from and to beside the canary keys, and is absent when not written', () => {
    const c = parseConfig(yaml('{canary: 10, promote-window: {from: 22, to: 6}}'), 'nodepool.yaml');
    assert.deepEqual(rolloutSettingsFor(c, 'vms', 'deb'),
      { canary: 10, promoteAfter: { launches: 10, ageMs: 3_600_000 }, abortOn: { launchFailures: 0 }, promoteWindow: { fromHour: 22, toHour: 6 } });
    assert.equal(rolloutSettingsFor(parseConfig(yaml('{canary: 10}'), 'nodepool.yaml'), 'vms', 'deb')?.promoteWindow, undefined);
  });

  it('reports hours out of range, a missing hour and an empty window at their path', () => {
    assert.deepEqual(problemsOf(yaml('{canary: 10, promote-window: {from: 24, to: 6}}')), [
      'nodepool.yaml: diskimages[0].rollout.promote-window.from: expected integer from 0 to 23, got 24',
    ]);
    assert.deepEqual(problemsOf(yaml('{canary: 10, promote-window: {from: 9}}')), [
      'nodepool.yaml: diskimages[0].rollout.promote-window.to: expected integer from 0 to 23, got nothing (required)',
    ]);
    assert.deepEqual(problemsOf(yaml('{canary: 10, promote-window: {from: 9, to: 9}}')), [
      'nodepool.yaml: diskimages[0].rollout.promote-window: expected different from and to hours, got 9 and 9 (leave the key out to promote at any hour)',
    ]);
  });
});
