import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ListedImage } from '../../../../lib/drivers/contract/image-service.js';
import { isOurs } from '../../../../server/image-lifecycle/leak-check.js';
import { graceOver, trackUnknown, unknownGuard } from '../../../../server/image-lifecycle/unknown-ids.js';

const MINE = '11111111-1111-4111-8111-111111111111';
const THEIRS = '22222222-2222-4222-8222-222222222222';
const image = (properties: Record<string, string>): ListedImage => ({ externalId: 'x', name: 'deb-1', status: 'active', properties });

describe('unknown ids and images', () => {
  it('tracks since when each key has been unknown, forgetting keys known again or gone', () => {
    const since = new Map<string, number>();
    trackUnknown(since, ['a', 'b'], 1000);
    trackUnknown(since, ['a', 'c'], 2000);
    assert.deepEqual([...since], [['a', 1000], ['c', 2000]]);
    assert.equal(graceOver(since.get('a'), 4000, 3), true);
    assert.equal(graceOver(since.get('c'), 4000, 3), false);
    assert.equal(graceOver(undefined, 1e12, 0), false, 'never seen: not over');
  });

  it('refuses when the store has no records, or when more than 3 and more than half are unknown', () => {
    assert.equal(unknownGuard({ what: 'ids', unknown: 0, total: 9, records: 0 }), null);
    assert.match(unknownGuard({ what: 'ids', unknown: 1, total: 1, records: 0 }) ?? '', /no records, but 1 ids exist/);
    assert.equal(unknownGuard({ what: 'ids', unknown: 3, total: 3, records: 5 }), null, 'a few strays are normal');
    assert.equal(unknownGuard({ what: 'ids', unknown: 4, total: 8, records: 5 }), null, 'half is not more than half');
    assert.match(unknownGuard({ what: 'ids', unknown: 5, total: 8, records: 5 }) ?? '', /5 of 8 ids are unknown/);
  });

  it('takes an image for ours by our installation id, or without one by a build id the store knows', () => {
    const known = new Set(['deb-0000000001']);
    assert.equal(isOurs(image({ nodepool_installation_id: MINE, nodepool_build_id: 'deb-0000000009' }), MINE, known), true);
    assert.equal(isOurs(image({ nodepool_installation_id: THEIRS, nodepool_build_id: 'deb-0000000001' }), MINE, known), false, 'another installation\'s, whatever its build id');
    assert.equal(isOurs(image({ nodepool_build_id: 'deb-0000000001' }), MINE, known), true, 'uploaded before images carried an id');
    assert.equal(isOurs(image({ nodepool_build_id: 'deb-0000000002' }), MINE, known), false);
    assert.equal(isOurs(image({}), MINE, known), false);
  });
});
