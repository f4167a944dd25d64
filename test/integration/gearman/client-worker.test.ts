import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, afterEach, before, describe, it } from 'node:test';
import { adminStatus, adminWorkers } from '../../../lib/gearman/admin.js';
import { GearmanClient } from '../../../lib/gearman/client.js';
import { GearmanWorker, type WorkerJob } from '../../../lib/gearman/worker.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, testLogger, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import { deferred } from '../../support/test-log.js';

const log = testLogger();
const fast = { initialMs: 20, maxMs: 200 };


void describe('gearman client and worker against gearmand', () => {
  let g: GearmandHandle;
  const cleanup = new Releasers();

  before(async () => { g = await startGearmand(); });
  afterEach(() => cleanup.releaseAll());
  after(async () => {
    await g.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function pair(opts: { concurrency?: number; clientId?: string } = {}): Promise<{ worker: GearmanWorker; client: GearmanClient }> {
    const worker = new GearmanWorker({ servers: [g.address], log, reconnect: fast, ...opts });
    const client = new GearmanClient({ servers: [g.address], log, reconnect: fast });
    cleanup.add('worker', () => worker.stop({ abortAfterMs: 2000 }));
    cleanup.add('client', () => client.stop());
    await worker.start();
    await client.start();
    return { worker, client };
  }

  void it('completes a job with a unique id and payload; the worker sees the unique', async () => {
    const { worker, client } = await pair();
    let seen: WorkerJob | undefined;
    worker.register('reverse', async (job) => {
      seen = job;
      return { type: 'complete', data: Buffer.from([...job.data.toString()].reverse().join('')) };
    });
    const job = client.submit('reverse', 'abc', { unique: 'uniq-123' });
    const res = await job.result;
    assert.equal(res.type, 'complete');
    assert.equal(res.type === 'complete' && res.data.toString(), 'cba');
    assert.match(await job.handle, new RegExp(`^H:p${g.port}:\\d+$`));
    assert.equal(seen?.unique, 'uniq-123');
    assert.equal(seen?.functionName, 'reverse');
    assert.equal(seen?.handle, await job.handle);
  });

  void it('coalesces two submits with the same unique into one handle, and both get the result', async () => {
    const { worker, client } = await pair();
    const a = client.submit('coalesce', 'first', { unique: 'same' });
    const b = client.submit('coalesce', 'second', { unique: 'same' });
    assert.equal(await a.handle, await b.handle);
    let runs = 0;
    worker.register('coalesce', async (job) => { runs++; return { type: 'complete', data: job.data }; });
    const [ra, rb] = await Promise.all([a.result, b.result]);
    assert.equal(runs, 1);
    assert.equal(ra.type === 'complete' && ra.data.toString(), 'first');
    assert.equal(rb.type === 'complete' && rb.data.toString(), 'first');
  });

  void it('registers and unregisters functions at runtime (CAN_DO / CANT_DO)', async () => {
    const { worker, client } = await pair({ clientId: 'runtime-cando' });
    const echo = async (job: WorkerJob): Promise<{ type: 'complete'; data: Buffer }> => ({ type: 'complete', data: job.data });
    worker.register('fn-a', echo);
    worker.register('fn-b', echo);
    const fnsOf = async (): Promise<string[] | undefined> =>
      (await adminWorkers(g.address)).find((w) => w.clientId === 'runtime-cando')?.functions.sort();
    await waitFor(async () => (await fnsOf())?.join() === 'fn-a,fn-b', { timeoutMs: 5000, what: 'fn-a and fn-b registered' });

    await worker.unregister('fn-a');
    assert.deepEqual(worker.registeredFunctions(), ['fn-b']);
    assert.equal(worker.isRegistered('fn-a'), false);
    await waitFor(async () => (await fnsOf())?.join() === 'fn-b', { timeoutMs: 5000, what: 'fn-a unregistered' });

    const orphan = client.submit('fn-a', 'x');
    await orphan.handle;
    const served = await client.submit('fn-b', 'still served').result;
    assert.equal(served.type === 'complete' && served.data.toString(), 'still served');
    const st = (await adminStatus(g.address)).find((s) => s.name === 'fn-a');
    assert.deepEqual(st, { name: 'fn-a', queued: 1, running: 0, workers: 0 });

    worker.register('fn-a', echo);
    const late = await orphan.result;
    assert.equal(late.type === 'complete' && late.data.toString(), 'x');
  });

  void it('delivers WORK_STATUS, WORK_DATA and WORK_WARNING to the client', async () => {
    const { worker, client } = await pair();
    worker.register('progress', async (job) => {
      job.sendStatus(1, 3);
      job.sendData('chunk1');
      job.sendWarning('careful');
      job.sendStatus(2, 3);
      job.sendData(Buffer.from('chunk2'));
      return { type: 'complete', data: 'final' };
    });
    const statuses: Array<[number, number]> = [];
    const data: string[] = [];
    const warnings: string[] = [];
    const res = await client.submit('progress', '', {
      onStatus: (n, d) => statuses.push([n, d]),
      onData: (d) => data.push(d.toString()),
      onWarning: (w) => warnings.push(w.toString()),
    }).result;
    assert.deepEqual(statuses, [[1, 3], [2, 3]]);
    assert.deepEqual(data, ['chunk1', 'chunk2']);
    assert.deepEqual(warnings, ['careful']);
    assert.equal(res.type, 'complete');
    assert.equal(res.type === 'complete' && res.data.toString(), 'final');
    assert.deepEqual(res.warnings.map(String), ['careful']);
  });

  void it('tells WORK_FAIL (message as warning) from WORK_EXCEPTION', async () => {
    const { worker, client } = await pair();
    worker.register('fails', async () => ({ type: 'fail', message: 'dib exited 1' }));
    worker.register('excepts', async () => ({ type: 'exception', message: 'bug: undefined is not a function' }));
    const f = await client.submit('fails', '').result;
    const e = await client.submit('excepts', '').result;
    assert.deepEqual(f, { type: 'fail', warnings: [Buffer.from('dib exited 1')] });
    assert.equal(e.type, 'exception');
    assert.equal(e.type === 'exception' && e.data.toString(), 'bug: undefined is not a function');
  });

  void it('turns a throwing handler into WORK_EXCEPTION with the stack, and a bad outcome too', async () => {
    const { worker, client } = await pair();
    worker.register('throws', async () => { throw new Error('kaboom'); });
    worker.register('sync-throws', (() => { throw new TypeError('sync kaboom'); }) as () => never);
    worker.register('bad-outcome', async () => ({ type: 'nope' }) as never);
    const r1 = await client.submit('throws', '').result;
    assert.equal(r1.type, 'exception');
    assert.match(r1.type === 'exception' ? r1.data.toString() : '', /^Error: kaboom\n\s+at /);
    const r2 = await client.submit('sync-throws', '').result;
    assert.match(r2.type === 'exception' ? r2.data.toString() : '', /TypeError: sync kaboom/);
    const r3 = await client.submit('bad-outcome', '').result;
    assert.match(r3.type === 'exception' ? r3.data.toString() : '', /invalid outcome/);
  });

  void it('runs a background job; its result resolves once created', async () => {
    const { worker, client } = await pair();
    const ran = deferred<string>();
    worker.register('bg', async (job) => { ran.resolve(job.data.toString()); return { type: 'complete' }; });
    const job = client.submit('bg', 'payload', { background: true, priority: 'high' });
    const res = await job.result;
    assert.deepEqual(res, { type: 'complete', data: Buffer.alloc(0), warnings: [] });
    assert.match(await job.handle, /^H:/);
    assert.equal(await ran.promise, 'payload');
  });

  void it('echoes a 4 MiB binary payload', async () => {
    const { worker, client } = await pair();
    worker.register('echo', async (job) => ({ type: 'complete', data: job.data }));
    const payload = randomBytes(4 * 1024 * 1024);
    const res = await client.submit('echo', payload, { priority: 'low' }).result;
    assert.equal(res.type, 'complete');
    assert.ok(res.type === 'complete' && res.data.equals(payload));
  });

  void it('rejects a unique of 64 or 65 bytes with a clear error; 63 bytes pass intact', async () => {
    const { worker, client } = await pair();
    let seen = '';
    worker.register('uniq', async (job) => { seen = job.unique; return { type: 'complete' }; });
    for (const n of [64, 65]) {
      const job = client.submit('uniq', '', { unique: 'u'.repeat(n) });
      await assert.rejects(job.result, (e: unknown) => e instanceof RangeError && e.message.includes(`${n} bytes`) && e.message.includes('63'));
      await assert.rejects(job.handle, RangeError);
    }
    const ok = await client.submit('uniq', '', { unique: 'u'.repeat(63) }).result;
    assert.equal(ok.type, 'complete');
    assert.equal(seen, 'u'.repeat(63));
  });

  void it('never runs more than `concurrency` jobs at once', async () => {
    const { worker, client } = await pair({ concurrency: 2 });
    let running = 0;
    let max = 0;
    const release = deferred();
    worker.register('slow', async () => {
      running++;
      max = Math.max(max, running);
      await release.promise;
      running--;
      return { type: 'complete' };
    });
    const jobs = Array.from({ length: 6 }, (_, i) => client.submit('slow', String(i)).result);
    await waitFor(() => worker.inFlight() === 2, { timeoutMs: 5000, what: 'two jobs in flight' });
    const st = await waitFor(async () => (await adminStatus(g.address)).find((s) => s.name === 'slow' && s.queued === 6), { timeoutMs: 5000, what: 'six jobs known to gearmand' });
    assert.equal(st.running, 2);
    release.resolve();
    const results = await Promise.all(jobs);
    assert.ok(results.every((r) => r.type === 'complete'));
    assert.equal(max, 2);
  });

  void it('reports a running job through GET_STATUS', async () => {
    const { worker, client } = await pair();
    const release = deferred();
    const reported = deferred();
    worker.register('status', async (job) => {
      job.sendStatus(1, 2);
      await release.promise;
      return { type: 'complete' };
    });
    const job = client.submit('status', '', { onStatus: () => reported.resolve() });
    await reported.promise;
    const handle = await job.handle;
    assert.deepEqual(await client.getStatus(handle), { known: true, running: true, numerator: 1, denominator: 2 });
    release.resolve();
    await job.result;
    assert.deepEqual(await client.getStatus(handle), { known: false, running: false, numerator: 0, denominator: 0 });
  });

  void it('fails submits after stop() with GearmanConnectionError and stays idempotent', async () => {
    const { client } = await pair();
    const pending = client.submit('nobody-serves-this', '');
    await pending.handle;
    const s1 = client.stop();
    const s2 = client.stop();
    assert.equal(s1, s2);
    await s1;
    await assert.rejects(pending.result, { name: 'GearmanConnectionError', message: 'client stopped' });
    await assert.rejects(client.submit('x', '').result, { name: 'GearmanConnectionError' });
  });
});
