import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pinnedUploadProblem } from '../../../lib/rollout/pinned-upload.js';
import type { UploadRecord } from '../../../lib/store/models.js';

const upload = (over: Partial<UploadRecord> = {}): UploadRecord => ({
  id: '0000000007', buildId: 'deb-0000000001', diskimage: 'deb', provider: 'vms', imageName: 'deb', state: 'validating',
  stateTime: 0, created: 0, externalId: 'deb-1-abc', externalName: 'deb-1', format: 'qcow2', reason: null, progress: null, ...over,
});

describe('pinnedUploadProblem', () => {
  it('accepts this provider\'s upload of the diskimage while validating or ready', () => {
    assert.equal(pinnedUploadProblem(upload(), 'vms', 'deb'), undefined);
    assert.equal(pinnedUploadProblem(upload({ state: 'ready' }), 'vms', 'deb'), undefined);
  });

  it('names what does not fit', () => {
    assert.equal(pinnedUploadProblem(undefined, 'vms', 'deb'), 'does not exist');
    assert.equal(pinnedUploadProblem(upload({ provider: 'cloud' }), 'vms', 'deb'), 'belongs to provider cloud');
    assert.equal(pinnedUploadProblem(upload({ diskimage: 'other' }), 'vms', 'deb'), 'is of diskimage other, not deb');
    assert.equal(pinnedUploadProblem(upload({ state: 'failed' }), 'vms', 'deb'), 'is failed');
    assert.equal(pinnedUploadProblem(upload({ state: 'deleting' }), 'vms', 'deb'), 'is deleting');
    assert.equal(pinnedUploadProblem(upload({ state: 'uploading', externalId: null }), 'vms', 'deb'), 'has no image in the provider yet');
  });
});
