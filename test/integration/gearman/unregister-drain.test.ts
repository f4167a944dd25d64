import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { GearmanClient } from '../../../lib/gearman/client.js';
import type { JobResult } from '../../../lib/gearman/types.js';
import { GearmanWorker } from '../../../lib/gearman/worker.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, testLogger, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import { deferred } from '../../support/test-log.js';

const log = testLogger();
const fast = { initialMs: 20, maxMs: 200 };

/** A job's end, readable without awaiting (for bounded waits). */
interface Pending { end?: JobResult; done: Promise<void> }

function track(result: Promise<JobResult>): Pending {
  const p: Pending = { done: Promise.resolve() };
  p.done = result.then((r) => { p.end = r; });
  return p;
}

function text(r: JobResult | undefined): string {
  if (!r) return '(no end)';
  return (r.type === 'fail' ? Buffer.concat(r.warnings) : r.data).toString('utf8');
}

// gearmand run with --job-retries=1 (as the docs require) fails a job at once when the worker
// holding it sends CANT_DO for its function: unregister used to do that to a running build.
void describe('gearman worker: unregister while a job of the function runs (gearmand --job-retries=1)', () => {
  let g: GearmandHandle;
  const cleanup = new Releasers();

  before(async () => { g = await startGearmand({ jobRetries: 1 }); });
  afterEach(() => cleanup.releaseAll());
  after(async () => {
    await g.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function functionsOf(clientId: string): Promise<string[]> {
    return (await adminWorkers(g.address)).filter((w) => w.clientId === clientId).flatMap((w) => w.functions).sort();
  }

  async function pair(clientId: string, concurrency: number): Promise<{ worker: GearmanWorker; client: GearmanClient }> {
    const worker = new GearmanWorker({ servers: [g.address], log, reconnect: fast, clientId, concurrency });
    const client = new GearmanClient({ servers: [g.address], log, reconnect: fast });
    cleanup.add('worker', () => worker.stop({ abortAfterMs: 2000 }));
    cleanup.add('client', () => client.stop());
    await worker.start();
    await client.start();
    return { worker, client };
  }

  void it('lets the running job complete, refuses a new job of it meanwhile, then sends CANT_DO', async () => {
    const { worker, client } = await pair('drain-a', 2);
    const release = deferred();
    const started = deferred();
    worker.register('slow', async (job) => {
      started.resolve();
      await release.promise;
      return { type: 'complete', data: `done ${job.data.toString()}` };
    });
    worker.register('other', async () => ({ type: 'complete', data: 'ok' }));
    await waitFor(async () => (await functionsOf('drain-a')).length === 2, { timeoutMs: 5000, what: 'both functions registered' });
    const first = track(client.submit('slow', 'one', { unique: 'one' }).result);
    await started.promise;

    let unregistered = false;
    const drained = worker.unregister('slow').then(() => { unregistered = true; });
    assert.equal(worker.isRegistered('slow'), false);
    assert.equal(worker.isDraining('slow'), true);

    // The running job is still held and the function still registered with gearmand.
    const fns = await functionsOf('drain-a');
    assert.ok(!first.end, `the running job ended early: ${text(first.end)}`);
    assert.deepEqual(fns, ['other', 'slow']);
    assert.equal(unregistered, false);

    // A second job of the function is taken by the free slot and refused at once, saying why.
    const second = track(client.submit('slow', 'two', { unique: 'two' }).result);
    await waitFor(() => second.end, { timeoutMs: 5000, what: 'the second slow job refused' });
    assert.equal(second.end?.type, 'fail');
    assert.equal(text(second.end), 'slow is being unregistered on drain-a: not taking new jobs of it');
    // Other functions are served meanwhile.
    const other = await client.submit('other', '', { unique: 'other' }).result;
    assert.equal(other.type, 'complete');
    assert.ok(!first.end, `the running job ended early: ${text(first.end)}`);

    release.resolve();
    const ended = await waitFor(() => first.end, { timeoutMs: 5000, what: 'the first slow job ended' });
    assert.equal(ended.type, 'complete', text(ended));
    assert.equal(text(ended), 'done one');
    await waitFor(() => unregistered, { timeoutMs: 5000, what: 'unregister resolved' });
    await drained;
    assert.equal(worker.isDraining('slow'), false);
    await waitFor(async () => !(await functionsOf('drain-a')).includes('slow'), { timeoutMs: 5000, what: 'CANT_DO slow reached gearmand' });
    assert.deepEqual(await functionsOf('drain-a'), ['other']);
  });

  void it('registering the function again during the drain keeps it registered and ends the wait', async () => {
    const { worker, client } = await pair('drain-b', 1);
    const release = deferred();
    const started = deferred();
    const handler = async (): Promise<{ type: 'complete'; data: string }> => {
      started.resolve();
      await release.promise;
      return { type: 'complete', data: 'done' };
    };
    worker.register('again', handler);
    await waitFor(async () => (await functionsOf('drain-b')).includes('again'), { timeoutMs: 5000, what: 'again registered' });
    const first = track(client.submit('again', '', { unique: 'a1' }).result);
    await started.promise;
    const drained = worker.unregister('again');
    worker.register('again', handler);
    await drained;
    assert.equal(worker.isDraining('again'), false);
    release.resolve();
    await waitFor(() => first.end, { timeoutMs: 5000, what: 'the job ended' });
    assert.equal(first.end?.type, 'complete', text(first.end));
    // Never CANT_DOed: still registered, and a later job runs.
    assert.deepEqual(await functionsOf('drain-b'), ['again']);
    const next = await client.submit('again', '', { unique: 'a2' }).result;
    assert.equal(next.type, 'complete');
  });

  void it('unregisters at once when no job of the function runs here', async () => {
    const { worker } = await pair('drain-c', 1);
    worker.register('idle', async () => ({ type: 'complete' }));
    await waitFor(async () => (await functionsOf('drain-c')).includes('idle'), { timeoutMs: 5000, what: 'idle registered' });
    await worker.unregister('idle');
    assert.equal(worker.isDraining('idle'), false);
    await waitFor(async () => (await functionsOf('drain-c')).length === 0, { timeoutMs: 5000, what: 'CANT_DO idle reached gearmand' });
  });
});
