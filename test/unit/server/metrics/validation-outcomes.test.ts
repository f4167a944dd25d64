import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../../lib/config/load.js';
import type { UploadRecord } from '../../../../lib/store/models.js';
import { uploadGauges, validationKey } from '../../../../server/metrics/statsd-reporter.js';
import { ValidationOutcomeTracker } from '../../../../server/metrics/validation-outcomes.js';

const T0 = 1_700_000_000_000;

function upload(id: string, over: Partial<UploadRecord> = {}): UploadRecord {
  return {
    id, buildId: 'deb-0000000001', diskimage: 'deb', provider: 'vms', imageName: 'deb', state: 'uploading', stateTime: T0 + 1000,
    created: T0 + 1000, externalId: null, externalName: null, format: null, reason: null, progress: null, ...over,
  };
}

const never = (): boolean => false;
const always = (): boolean => true;

describe('validation outcomes from upload records', () => {
  it('counts a validating upload once when it becomes ready or fails with a validation reason', () => {
    const t = new ValidationOutcomeTracker(T0);
    assert.deepEqual(t.observe([upload('1', { state: 'validating' }), upload('2', { state: 'validating' })], never), []);
    const later = [
      upload('1', { state: 'ready', stateTime: T0 + 5000 }),
      upload('2', { state: 'failed', stateTime: T0 + 6000, reason: 'validation: node did not answer SSH\nconsole tail' }),
    ];
    assert.deepEqual(t.observe(later, never), [
      { provider: 'vms', diskimage: 'deb', uploadId: '1', result: 'passed' },
      { provider: 'vms', diskimage: 'deb', uploadId: '2', result: 'failed' },
    ]);
    assert.deepEqual(t.observe(later, never), [], 'not again in the next snapshot');
  });

  it('counts a validation that ran out of time as failed', () => {
    const t = new ValidationOutcomeTracker(T0);
    assert.deepEqual(t.observe([upload('9', { state: 'validating' })], never), []);
    const timedOut = upload('9', { state: 'failed', stateTime: T0 + 7000, reason: 'validation timed out: node 0000000042 was still booting at the 600 s deadline' });
    assert.deepEqual(t.observe([timedOut], never).map((o) => o.result), ['failed']);
  });

  it('counts a ready upload of a validated target even when no snapshot saw it validating', () => {
    const t = new ValidationOutcomeTracker(T0);
    assert.deepEqual(t.observe([upload('3', { state: 'ready', stateTime: T0 + 2000 })], always).map((o) => o.result), ['passed']);
    assert.deepEqual(new ValidationOutcomeTracker(T0).observe([upload('3', { state: 'ready', stateTime: T0 + 2000 })], never), [],
      'a target without validate: passes nothing');
  });

  it('does not count other failures, uploads still running, or what ended before it started', () => {
    const t = new ValidationOutcomeTracker(T0);
    assert.deepEqual(t.observe([
      upload('4', { state: 'failed', reason: 'Glance said 503' }),
      upload('5', { state: 'failed', reason: 'post-upload-hook /x exited 3: no' }),
      upload('6', { state: 'uploading' }),
      upload('7', { state: 'ready', stateTime: T0 - 1 }),
      upload('8', { state: 'failed', stateTime: T0 - 1, reason: 'validation: old' }),
    ], always), []);
  });

  it('forgets records no longer listed', () => {
    const t = new ValidationOutcomeTracker(T0);
    t.observe([upload('9', { state: 'validating' })], never);
    t.observe([], never);
    assert.deepEqual(t.observe([upload('9', { state: 'ready', stateTime: T0 - 5 })], never), [], 'the validating sighting was dropped with the record');
  });

  it('statsd: upload gauges for every state, validating included, and a counter per outcome', () => {
    const config = parseConfig([
      'labels: [{name: small}]', 'diskimages: [{name: deb}]', 'providers:',
      '  - {name: vms, driver: qemu, image-dir: /var/lib/nodepool/vm-images, diskimages: [{name: deb}], pools: [{name: main, labels: [{name: small, diskimage: deb}]}]}',
    ].join('\n'), 'nodepool.yaml');
    const g = uploadGauges(config, [upload('1', { state: 'validating' }), upload('2', { state: 'ready' })]);
    assert.deepEqual([...g].filter(([k]) => k.startsWith('nodepool.uploads.')), [
      ['nodepool.uploads.uploading', 0], ['nodepool.uploads.validating', 1], ['nodepool.uploads.ready', 1],
      ['nodepool.uploads.failed', 0], ['nodepool.uploads.deleting', 0],
    ]);
    assert.equal(g.get('nodepool.provider.vms.uploads.validating'), 1);
    assert.equal(validationKey({ provider: 'cloud:a', diskimage: 'deb', uploadId: '1', result: 'failed' }), 'nodepool.image_validation.deb.cloud_a.failed');
  });
});
