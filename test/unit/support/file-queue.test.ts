import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FileQueue, type FileQueueSummary } from '../../support/file-queue.js';

/** A run that ends when the test says so, recording what ran at once. */
function controlledRuns(): { run: (file: string) => Promise<number>; finish: (file: string, code?: number) => void; running: Set<string>; ran: string[]; most: () => number } {
  const ends = new Map<string, (code: number) => void>();
  const running = new Set<string>();
  const ran: string[] = [];
  let most = 0;
  return {
    run: (file) => new Promise<number>((resolve) => {
      running.add(file);
      ran.push(file);
      most = Math.max(most, running.size);
      ends.set(file, (code) => {
        running.delete(file);
        resolve(code);
      });
    }),
    finish: (file, code = 0) => ends.get(file)?.(code),
    running,
    ran,
    most: () => most,
  };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('test runner file queue', () => {
  it('runs every file once, in order, with lanes taking the next as they come free', async () => {
    const runs = controlledRuns();
    const queue = new FileQueue(['a', 'b', 'c', 'd'], { ready: async () => undefined, run: runs.run, notRun: () => 1 });
    const lanes = [queue.drain(), queue.drain()];
    await settle();
    assert.deepEqual([...runs.running], ['a', 'b']);
    runs.finish('b');
    await settle();
    assert.deepEqual([...runs.running], ['a', 'c']);
    runs.finish('a', 1);
    await settle();
    runs.finish('c');
    await settle();
    runs.finish('d');
    assert.deepEqual(await Promise.all(lanes), [1, 0], 'each lane reports the worst code of the files it ran');
    assert.deepEqual(runs.ran, ['a', 'b', 'c', 'd']);
  });

  it('runs at most maxAtOnce files at once however many lanes drain it', async () => {
    const runs = controlledRuns();
    const queue = new FileQueue(['a', 'b', 'c', 'd'], { ready: async () => undefined, run: runs.run, notRun: () => 1, maxAtOnce: 2 });
    const lanes = [queue.drain(), queue.drain(), queue.drain()];
    await settle();
    assert.equal(runs.running.size, 2);
    for (const f of ['a', 'b', 'c', 'd']) {
      await settle();
      runs.finish(f);
    }
    assert.deepEqual(await Promise.all(lanes), [0, 0, 0]);
    assert.equal(runs.most(), 2);
    assert.deepEqual(runs.ran, ['a', 'b', 'c', 'd']);
  });

  it('reports a file whose prerequisite failed as not run, and ends with one summary', async () => {
    const runs = controlledRuns();
    const notRun: string[] = [];
    const summaries: FileQueueSummary[] = [];
    const queue = new FileQueue(['a', 'b'], {
      ready: async (f) => (f === 'a' ? new Error('the cloud failed to start') : undefined),
      run: runs.run,
      notRun: (f, err) => {
        notRun.push(`${f}: ${err.message}`);
        return 1;
      },
      onEnd: (s) => summaries.push(s),
    });
    const lane = queue.drain();
    await settle();
    runs.finish('b');
    assert.equal(await lane, 1);
    assert.deepEqual(notRun, ['a: the cloud failed to start']);
    assert.deepEqual(runs.ran, ['b']);
    assert.equal(summaries.length, 1);
    assert.equal(summaries[0]?.files, 2);
    assert.equal(summaries[0]?.most, 1);
    assert.equal(queue.waiting, 0);
  });

  it('an empty queue ends at once', async () => {
    const queue = new FileQueue([], { ready: async () => undefined, run: async () => 1, notRun: () => 1 });
    assert.equal(await queue.drain(), 0);
  });
});
