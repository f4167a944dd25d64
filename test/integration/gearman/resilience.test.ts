import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { AbortedError, GearmanConnectionError } from '../../../lib/errors.js';
import { adminStatus, adminWorkers } from '../../../lib/gearman/admin.js';
import { GearmanClient } from '../../../lib/gearman/client.js';
import type { GearmanServerAddress } from '../../../lib/gearman/types.js';
import { GearmanWorker, type WorkerJob } from '../../../lib/gearman/worker.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, testLogger, type GearmandHandle, type StartGearmandOptions } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import { deferred } from '../../support/test-log.js';

const log = testLogger();
const fast = { initialMs: 20, maxMs: 200 };


const echo = async (job: WorkerJob): Promise<{ type: 'complete'; data: Buffer }> => ({ type: 'complete', data: job.data });

void describe('gearman resilience (gearmand per test)', () => {
  const cleanup = new Releasers();

  afterEach(async () => {
    await cleanup.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function gearmand(opts?: StartGearmandOptions): Promise<GearmandHandle> {
    const g = await startGearmand(opts);
    cleanup.add('gearmand', () => g.stop());
    return g;
  }

  function worker(servers: GearmanServerAddress[], opts: { clientId?: string; concurrency?: number } = {}): GearmanWorker {
    const w = new GearmanWorker({ servers, log, reconnect: fast, ...opts });
    cleanup.add('worker', () => w.stop({ abortAfterMs: 1000, abortGraceMs: 1000 }));
    return w;
  }

  function client(servers: GearmanServerAddress[]): GearmanClient {
    const c = new GearmanClient({ servers, log, reconnect: fast });
    cleanup.add('client', () => c.stop());
    return c;
  }

  void it('re-registers after gearmand is SIGKILLed and restarted on the same port; a new job completes', async () => {
    const g = await gearmand();
    const w = worker([g.address], { clientId: 'restart-test' });
    const c = client([g.address]);
    w.register('echo', echo);
    await w.start();
    await c.start();
    assert.equal((await c.submit('echo', 'before').result).type, 'complete');

    const oldPid = g.pid;
    await g.kill();
    await g.restart();
    assert.notEqual(g.pid, oldPid);
    await waitFor(async () => (await adminWorkers(g.address)).some((x) => x.clientId === 'restart-test' && x.functions.includes('echo')),
      { timeoutMs: 5000, what: 'worker re-registered after restart' });
    const res = await c.submit('echo', 'after').result;
    assert.equal(res.type === 'complete' && res.data.toString(), 'after');
  });

  void it('rejects a foreground job in flight within 2 s when gearmand dies, and drops the late result harmlessly', async () => {
    const g = await gearmand();
    const w = worker([g.address]);
    const c = client([g.address]);
    const started = deferred<WorkerJob>();
    const release = deferred();
    w.register('hang', async (job) => { started.resolve(job); await release.promise; return { type: 'complete', data: 'late' }; });
    const ended = new Promise<boolean>((resolve) => w.once('job:end', (_info, _outcome, delivered) => resolve(delivered)));
    await w.start();
    await c.start();
    const job = c.submit('hang', '');
    const wj = await started.promise;

    const t0 = Date.now();
    await g.kill();
    await assert.rejects(job.result, GearmanConnectionError);
    assert.ok(Date.now() - t0 < 2000, `rejected after ${Date.now() - t0} ms`);
    await waitFor(() => wj.signal.aborted, { timeoutMs: 2000, what: 'job signal aborted on connection loss' });
    assert.ok(wj.signal.reason instanceof GearmanConnectionError);

    await g.restart();
    await waitFor(() => w.connectedCount() === 1 && c.connectedCount() === 1, { timeoutMs: 5000, what: 'reconnected' });
    release.resolve();
    assert.equal(await ended, false, 'late result is not delivered');
    w.register('echo', echo);
    const res = await c.submit('echo', 'still alive').result;
    assert.equal(res.type === 'complete' && res.data.toString(), 'still alive');
  });

  void it('spreads jobs over two gearmand servers and fails over when one is killed', async () => {
    const [g1, g2] = await Promise.all([gearmand(), gearmand()]);
    const servers = [g1.address, g2.address];
    const w = worker(servers);
    const c = client(servers);
    w.register('echo', echo);
    await w.start();
    await c.start();
    await waitFor(() => w.connectedCount() === 2 && c.connectedCount() === 2, { timeoutMs: 5000, what: 'both servers connected' });

    const jobs = Array.from({ length: 10 }, (_, i) => c.submit('echo', String(i)));
    const results = await Promise.all(jobs.map((j) => j.result));
    assert.ok(results.every((r) => r.type === 'complete'));
    const handles = await Promise.all(jobs.map((j) => j.handle));
    assert.equal(handles.filter((h) => h.startsWith(`H:p${g1.port}:`)).length, 5);
    assert.equal(handles.filter((h) => h.startsWith(`H:p${g2.port}:`)).length, 5);

    await g1.kill();
    await waitFor(() => c.connectedCount() === 1 && w.connectedCount() === 1, { timeoutMs: 5000, what: 'server 1 seen down' });
    const after = Array.from({ length: 5 }, (_, i) => c.submit('echo', `after-${i}`));
    const afterResults = await Promise.all(after.map((j) => j.result));
    assert.ok(afterResults.every((r) => r.type === 'complete'));
    for (const h of await Promise.all(after.map((j) => j.handle))) assert.ok(h.startsWith(`H:p${g2.port}:`), h);
  });

  void it('queues submits while no server is up and sends them once one is', async () => {
    const g = await gearmand();
    await g.kill();
    const w = worker([g.address]);
    const c = client([g.address]);
    w.register('echo', echo);
    await w.start();
    await c.start();
    const job = c.submit('echo', 'queued', { createdTimeoutMs: 10_000 });
    const lost = c.submit('echo', 'too late', { createdTimeoutMs: 50 });
    await assert.rejects(lost.result, /no gearman server available within 50 ms/);
    await g.restart();
    const res = await job.result;
    assert.equal(res.type === 'complete' && res.data.toString(), 'queued');
  });

  void it('stop() stops grabbing and drains the job in flight', async () => {
    const g = await gearmand();
    const w = worker([g.address]);
    const c = client([g.address]);
    const started = deferred();
    const release = deferred();
    w.register('drain', async () => { started.resolve(); await release.promise; return { type: 'complete', data: 'drained' }; });
    await w.start();
    await c.start();
    const first = c.submit('drain', '');
    await started.promise;
    let stopped = false;
    const stopping = w.stop().then(() => { stopped = true; });
    const second = c.submit('drain', '');
    await second.handle;
    await waitFor(async () => (await adminStatus(g.address)).find((s) => s.name === 'drain' && s.queued === 2), { timeoutMs: 5000, what: 'second job queued' });
    assert.equal(stopped, false);
    assert.equal(w.inFlight(), 1);
    release.resolve();
    await stopping;
    const res = await first.result;
    assert.equal(res.type === 'complete' && res.data.toString(), 'drained');
    const st = (await adminStatus(g.address)).find((s) => s.name === 'drain');
    assert.deepEqual(st, { name: 'drain', queued: 1, running: 0, workers: 0 });
  });

  void it('stop({ abortAfterMs }) aborts the running job\'s signal', async () => {
    const g = await gearmand();
    const w = worker([g.address]);
    const c = client([g.address]);
    const started = deferred<WorkerJob>();
    w.register('abortable', async (job) => {
      started.resolve(job);
      await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
      return { type: 'fail', message: 'aborted' };
    });
    await w.start();
    await c.start();
    const job = c.submit('abortable', '');
    const wj = await started.promise;
    const t0 = Date.now();
    await w.stop({ abortAfterMs: 100 });
    assert.ok(Date.now() - t0 >= 90);
    assert.ok(wj.signal.reason instanceof AbortedError);
    assert.deepEqual(await job.result, { type: 'fail', warnings: [Buffer.from('aborted')] });
  });

  void it('with --job-retries=1, a worker lost mid-job gives the client WORK_FAIL', async () => {
    const g = await gearmand({ jobRetries: 1 });
    const w = worker([g.address]);
    const c = client([g.address]);
    const started = deferred();
    w.register('doomed', async () => { started.resolve(); return new Promise<never>(() => undefined); });
    await w.start();
    await c.start();
    const job = c.submit('doomed', '');
    await started.promise;
    await w.stop({ abortAfterMs: 0, abortGraceMs: 0 });
    assert.deepEqual(await job.result, { type: 'fail', warnings: [] });
  });
  void it('keeps the concurrency limit across two servers', async () => {
    const [g1, g2] = await Promise.all([gearmand(), gearmand()]);
    const servers = [g1.address, g2.address];
    const w = worker(servers, { concurrency: 2 });
    const c = client(servers);
    let running = 0;
    let max = 0;
    w.register('slow', async () => {
      running++;
      max = Math.max(max, running);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running--;
      return { type: 'complete' };
    });
    await w.start();
    await c.start();
    await waitFor(() => w.connectedCount() === 2 && c.connectedCount() === 2, { timeoutMs: 5000, what: 'both servers connected' });
    const jobs = Array.from({ length: 12 }, (_, i) => c.submit('slow', String(i)));
    const results = await Promise.all(jobs.map((j) => j.result));
    assert.ok(results.every((r) => r.type === 'complete'));
    assert.equal(max, 2);
    const handles = await Promise.all(jobs.map((j) => j.handle));
    assert.equal(handles.filter((h) => h.startsWith(`H:p${g1.port}:`)).length, 6);
  });
});
