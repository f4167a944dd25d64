import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ListedImage } from '../../../../lib/drivers/contract/image-service.js';
import { unaccountedImages } from '../../../../server/image-lifecycle/leak-check.js';
import { uid, upload } from './planner-fixtures.js';

/** A Glance image of provider p1 carrying upload id `n` (or none). */
const image = (externalId: string, n: number | null, provider = 'p1'): ListedImage => ({
  externalId, name: `a-${externalId}`, status: 'active',
  properties: n === null ? { nodepool_provider_name: provider } : { nodepool_provider_name: provider, nodepool_upload_id: uid(n) },
});
const leaked = (images: ListedImage[], uploads = [upload(1, 'a', 1)]): string[] =>
  unaccountedImages('p1', images, uploads).map((i) => i.externalId);

describe('leak check: which cloud images no upload record accounts for', () => {
  it('keeps the image a ready record names', () => {
    assert.deepEqual(leaked([image('ext-1', 1)]), []);
  });

  it('takes an earlier attempt of a ready upload (same upload id, another image) for a leak', () => {
    assert.deepEqual(leaked([image('first-try', 1), image('ext-1', 1)]), ['first-try']);
  });

  it('keeps every image of an upload still in flight', () => {
    assert.deepEqual(leaked([image('x', 1), image('y', 1)], [upload(1, 'a', 1, 'p1', 'uploading')]), []);
  });

  it('takes images of failed and of missing records for leaks', () => {
    assert.deepEqual(leaked([image('x', 1), image('y', 2)], [upload(1, 'a', 1, 'p1', 'failed')]), ['x', 'y']);
  });

  it('keeps only the named image of a record being deleted', () => {
    const deleting = upload(1, 'a', 1, 'p1', 'deleting', { externalId: 'ext-1' });
    assert.deepEqual(leaked([image('ext-1', 1), image('old', 1)], [deleting]), ['old']);
  });

  it('keeps every image of an upload record that does not validate, whatever it says (issue 31)', () => {
    const images = [image('x', 1), image('y', 2), image('z', 3)];
    assert.deepEqual(unaccountedImages('p1', images, [upload(1, 'a', 1, 'p1', 'failed')], new Set([uid(1), uid(2)])).map((i) => i.externalId), ['z']);
  });

  it('ignores images without an upload id, and records of other providers', () => {
    assert.deepEqual(leaked([image('mine', null)]), []);
    assert.deepEqual(leaked([image('ext-1', 1)], [upload(1, 'a', 1, 'p2')]), ['ext-1']);
  });
});
