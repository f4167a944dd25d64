import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitNodeset } from '../../../lib/client/nodeset.js';

const l = (...supportedLabels: string[]) => ({ supportedLabels });

describe('splitNodeset', () => {
  it('keeps the nodeset whole when one launcher serves every label, or when none is known', () => {
    assert.deepEqual(splitNodeset(['a', 'b', 'a'], [l('a'), l('a', 'b')]), [{ labels: ['a', 'b', 'a'], positions: [0, 1, 2] }]);
    assert.deepEqual(splitNodeset(['a'], []), [{ labels: ['a'], positions: [0] }]);
  });

  it('splits across launchers, the one serving most of the rest first, keeping positions', () => {
    assert.deepEqual(splitNodeset(['s', 'c', 's', 'c', 'c'], [l('s'), l('c')]), [
      { labels: ['c', 'c', 'c'], positions: [1, 3, 4] },
      { labels: ['s', 's'], positions: [0, 2] },
    ]);
  });

  it('puts labels nobody serves in a last part (it fails with the launchers\' reason)', () => {
    assert.deepEqual(splitNodeset(['s', 'gpu', 'c'], [l('s'), l('c', 'x')]), [
      { labels: ['s'], positions: [0] },
      { labels: ['c'], positions: [2] },
      { labels: ['gpu'], positions: [1] },
    ]);
  });
});
