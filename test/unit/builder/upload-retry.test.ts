import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CloudError, InvalidJobError, UploadTimeoutError } from '../../../lib/errors.js';
import { parseUploadAttempt } from '../../../server/image-lifecycle/job-results.js';
import { retryableUploadError, uploadRetryDelayMs } from '../../../workers/builder/upload-retry.js';

describe('upload attempts', () => {
  it('tries again after a dropped connection, a 5xx or a 429, and not after a rejection, a timeout, an abort or a bad job', () => {
    assert.equal(retryableUploadError(new CloudError('Glance PUT /v2/images/x/file failed: socket hang up')), true);
    assert.equal(retryableUploadError(new CloudError('Glance PUT failed with 503', { status: 503 })), true);
    assert.equal(retryableUploadError(new CloudError('Glance PUT failed with 429', { status: 429 })), true);
    assert.equal(retryableUploadError(new CloudError('Glance PUT failed with 413', { status: 413 })), false);
    // As the HTTP client makes it when the call's signal aborts.
    assert.equal(retryableUploadError(new CloudError('Glance PUT /v2/images/x/file aborted', { retryable: false })), false);
    assert.equal(retryableUploadError(new UploadTimeoutError('did not finish within 2 s')), false);
    assert.equal(retryableUploadError(new InvalidJobError('bad payload')), false);
    assert.equal(retryableUploadError(new Error('ENOENT')), false);
  });

  it('waits the base delay before the second attempt and doubles after', () => {
    assert.deepEqual([2, 3, 4].map((n) => uploadRetryDelayMs(n, 5000)), [5000, 10_000, 20_000]);
  });

  it('turns the builder\'s note into the reason the server shows, and ignores other data', () => {
    const note = Buffer.from(JSON.stringify({ 'upload-attempt': 2, attempts: 3, 'last-error': 'failed with 503' }));
    assert.equal(parseUploadAttempt(note), 'attempt 2 of 3, after: failed with 503');
    assert.equal(parseUploadAttempt(Buffer.from('{"builder":"b1","builder-id":"x"}')), undefined);
    assert.equal(parseUploadAttempt(Buffer.from('not json')), undefined);
  });
});
