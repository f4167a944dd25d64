import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { longestFirst, readDurations, recordDurations } from '../../support/duration-history.js';

describe('test runner duration history', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'nodepool-durations-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('orders files longest first; a file with no history counts as the median, ties keep their order', () => {
    const history = new Map([['a', 10], ['b', 500], ['c', 40], ['e', 40]]);
    assert.deepEqual(longestFirst(['a', 'b', 'c', 'd', 'e'], history), ['b', 'c', 'd', 'e', 'a']);
  });

  it('keeps the order when nothing is known, and matches files through the key given', () => {
    assert.deepEqual(longestFirst(['b', 'a'], new Map()), ['b', 'a']);
    assert.deepEqual(longestFirst(['/repo/x', '/repo/y'], new Map([['y', 2], ['x', 1]]), (f) => path.basename(f)), ['/repo/y', '/repo/x']);
  });

  it('records a run over the earlier ones and reads them back; a missing or corrupt file is no history', async () => {
    const file = path.join(dir, 'durations.json');
    assert.deepEqual(readDurations(file), new Map());
    recordDurations(new Map([['a', 1], ['b', 2]]), file);
    recordDurations(new Map([['b', 3]]), file);
    assert.deepEqual(readDurations(file), new Map([['a', 1], ['b', 3]]));
    await writeFile(file, '{ not json');
    assert.deepEqual(readDurations(file), new Map());
    await writeFile(file, JSON.stringify({ a: 'slow', b: -1, c: 7 }));
    assert.deepEqual(readDurations(file), new Map([['c', 7]]));
  });
});
