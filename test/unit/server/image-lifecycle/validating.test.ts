/**
 * The planner's rules for `validating` uploads (issue 14 §2): in progress (no new upload, not
 * resumed), resolved when the target left or dropped `validate:`, failed when nobody finished
 * it long after its deadline; retention counts ready uploads only and never deletes one in
 * validation; the leak check and alien-image-list count its image as accounted for.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { alienImages } from '../../../../lib/client/alien-images.js';
import { parseConfig } from '../../../../lib/config/load.js';
import type { ListedImage } from '../../../../lib/drivers/contract/image-service.js';
import { unaccountedImages } from '../../../../server/image-lifecycle/leak-check.js';
import { validationDeadline, validationGraceMs } from '../../../../server/image-lifecycle/validating.js';
import { ago, bid, build, config, NOW, table, uid, upload } from './planner-fixtures.js';

/** Diskimage `a` on openstack provider `p1`, validated by booting label `small` (timeout 600 s unless given). */
function validated(validate: object | null = {}): ReturnType<typeof config> {
  return parseConfig(JSON.stringify({
    labels: [{ name: 'small' }],
    diskimages: [{ name: 'a', 'rebuild-age': 86400, 'build-timeout': 3600 }],
    providers: [{
      name: 'p1', cloud: 'c', diskimages: [validate ? { name: 'a', validate } : { name: 'a' }],
      pools: [{ name: 'main', labels: [{ name: 'small', diskimage: 'a', 'min-ram': 512 }] }],
    }],
    'image-lifecycle': { interval: 10, 'retry-delay': 60, 'max-retry-delay': 3600, 'build-timeout-grace': 300 },
  }), 'nodepool.yaml');
}

const V = validated();

const A2 = bid('a', 2);
const validating = (n: number, seq: number, secondsAgo = 60) =>
  upload(n, 'a', seq, 'p1', 'validating', { stateTime: ago(secondsAgo), externalId: `ext-${n}` });

table('rule 3b: validating uploads', [
  {
    name: 'counts a validating upload as in progress: no upload of a newer build starts meanwhile',
    config: V, builds: [build('a', 1), build('a', 2), build('a', 3)], uploads: [upload(1, 'a', 1), validating(2, 2)],
    actions: [],
  },
  {
    name: 'neither resumes nor re-uploads a validating upload of the newest build',
    config: V, builds: [build('a', 1)], uploads: [validating(1, 1)],
    actions: [],
  },
  {
    name: 'leaves a validation past its deadline to its launcher during the grace',
    config: V, builds: [build('a', 1)], uploads: [validating(1, 1, 600 + 299)],
    actions: [],
  },
  {
    name: 'fails a validation no launcher finished long after its deadline, which then backs off',
    config: V, builds: [build('a', 1)], uploads: [validating(1, 1, 600 + 300)],
    actions: [{ type: 'fail-validation', uploadId: uid(1), reason: 'validation timed out: no launcher of provider p1 finished it within 600 s' }],
    target: { failures: 1, retryAt: NOW + 60_000 },
  },
  {
    name: 'makes a validating upload ready when its target no longer has validate: (the operator dropped the gate)',
    config: config(), builds: [build('a', 1)], uploads: [validating(1, 1)],
    actions: [{ type: 'skip-validation', uploadId: uid(1), reason: 'provider p1 no longer validates a' }],
  },
  {
    name: 'fails a validating upload whose provider no longer lists the diskimage',
    config: config({ providers: [{ name: 'p1', cloud: 'c', diskimages: [] }] }), builds: [build('a', 1)], uploads: [validating(1, 1)],
    actions: [{ type: 'fail-validation', uploadId: uid(1), reason: 'validation: provider p1 no longer lists a' }],
  },
  {
    name: 'backs off after a failed validation, keeping the previous ready upload',
    config: V, builds: [build('a', 1), build('a', 2)],
    uploads: [upload(1, 'a', 1), upload(2, 'a', 2, 'p1', 'failed', { stateTime: ago(30), reason: 'validation: command exited 1' })],
    actions: [], target: { failures: 1, lastFailure: 'validation: command exited 1', retryAt: ago(30) + 60_000 },
  },
  {
    name: 'uploads the build again once the backoff after a failed validation is over',
    config: V, builds: [build('a', 1), build('a', 2)],
    uploads: [upload(1, 'a', 1), upload(2, 'a', 2, 'p1', 'failed', { stateTime: ago(61), reason: 'validation: command exited 1' })],
    actions: [{ type: 'start-upload', buildId: A2, provider: 'p1', imageName: 'a' }],
  },
]);

table('rule 5 with validation: retention counts ready (validated) uploads only', [
  {
    name: 'keeps the two newest ready uploads while a newer one validates, and does not delete the validating one',
    config: V, builds: [build('a', 1), build('a', 2), build('a', 3), build('a', 4)],
    uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 3), validating(4, 4)],
    actions: [{ type: 'delete-upload', uploadId: uid(1), reason: 'retention' }],
  },
  {
    name: 'never deletes a validating upload, even when its build is being deleted',
    config: V, builds: [build('a', 1), build('a', 2, 'deleting')], uploads: [upload(1, 'a', 1), validating(2, 2)],
    actions: [],
  },
  {
    name: 'keeps a failed validation visible (with its reason) while it is the newest failure',
    config: V, builds: [build('a', 1), build('a', 2)],
    uploads: [upload(1, 'a', 1), upload(2, 'a', 2, 'p1', 'failed', { stateTime: ago(30), externalId: 'ext-2', reason: 'validation: boot failed' })],
    actions: [],
  },
]);

describe('validation deadline', () => {
  it('counts the timeout from when the upload entered validating', () => {
    assert.equal(validationDeadline(1_000_000, { timeout: 600 }), 1_600_000);
  });

  it('lets the planner wait at least 5 minutes and 3 passes past the deadline', () => {
    assert.equal(validationGraceMs(10), 300_000);
    assert.equal(validationGraceMs(200), 600_000);
  });
});

describe('images of validating uploads are accounted for', () => {
  const image = (externalId: string, n: number): ListedImage => ({
    externalId, name: `a-${externalId}`, status: 'active', properties: { nodepool_provider_name: 'p1', nodepool_upload_id: uid(n) },
  });

  it('the leak check keeps the image a validating record names and takes an earlier attempt for a leak', () => {
    const leaks = unaccountedImages('p1', [image('ext-1', 1), image('first-try', 1)], [validating(1, 1)]);
    assert.deepEqual(leaks.map((i) => i.externalId), ['first-try']);
  });

  it('the leak check takes the image of a failed validation for a leak (its delete may have failed)', () => {
    const failed = upload(1, 'a', 1, 'p1', 'failed', { externalId: 'ext-1', reason: 'validation: boot failed' });
    assert.deepEqual(unaccountedImages('p1', [image('ext-1', 1)], [failed]).map((i) => i.externalId), ['ext-1']);
  });

  it('alien-image-list does not list the image of a validating upload', () => {
    assert.deepEqual(alienImages('p1', [image('ext-1', 1)], [validating(1, 1)]), []);
    assert.deepEqual(alienImages('p1', [image('ext-1', 1)], [upload(1, 'a', 1, 'p1', 'failed', { externalId: 'ext-1' })]).map((a) => a.externalId), ['ext-1']);
  });
});
