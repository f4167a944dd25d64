import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { GearmanConnectionError, GearmanServerError } from '../../../lib/errors.js';
import { adminCommand, adminStatus, adminWorkers } from '../../../lib/gearman/admin.js';
import { GearmanClient } from '../../../lib/gearman/client.js';
import { GearmanWorker } from '../../../lib/gearman/worker.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, testLogger, type GearmandHandle } from '../../support/gearmand.js';
import { freePort, runningProcesses } from '../../support/processes.js';

const log = testLogger();

void describe('gearman admin protocol', () => {
  let g: GearmandHandle;
  const cleanup = new Releasers();

  before(async () => { g = await startGearmand(); });
  afterEach(() => cleanup.releaseAll());
  after(async () => {
    await g.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  void it('parses `status` into queued / running / workers per function', async () => {
    const worker = new GearmanWorker({ servers: [g.address], log, clientId: 'status-worker' });
    const client = new GearmanClient({ servers: [g.address], log });
    cleanup.add('worker', () => worker.stop());
    cleanup.add('client', () => client.stop());
    worker.register('image-build:debian', async () => ({ type: 'complete' }));
    await worker.start();
    await client.start();
    await Promise.all([client.submit('image-upload:x-0000000001', '', { background: true }).handle,
      client.submit('image-upload:x-0000000001', '', { background: true, unique: 'u2' }).handle]);
    const status = await waitFor(async () => {
      const s = await adminStatus(g.address);
      return s.some((f) => f.name === 'image-build:debian' && f.workers === 1) ? s : undefined;
    }, { timeoutMs: 5000, what: 'image-build:debian has a worker' });
    assert.deepEqual(status.find((f) => f.name === 'image-upload:x-0000000001'), { name: 'image-upload:x-0000000001', queued: 2, running: 0, workers: 0 });
    assert.deepEqual(status.find((f) => f.name === 'image-build:debian'), { name: 'image-build:debian', queued: 0, running: 0, workers: 1 });
  });

  void it('parses `workers` with the SET_CLIENT_ID client id, and "-" when unset', async () => {
    const named = new GearmanWorker({ servers: [g.address], log, clientId: 'builder-host:0001' });
    const anonymous = new GearmanWorker({ servers: [g.address], log });
    cleanup.add('named', () => named.stop());
    cleanup.add('anonymous', () => anonymous.stop());
    named.register('image-upload:a-0000000001', async () => ({ type: 'complete' }));
    named.register('image-delete:a-0000000001', async () => ({ type: 'complete' }));
    anonymous.register('anon-fn', async () => ({ type: 'complete' }));
    await named.start();
    await anonymous.start();
    const workers = await waitFor(async () => {
      const ws = await adminWorkers(g.address);
      return ws.some((w) => w.functions.includes('anon-fn')) && ws.some((w) => w.functions.length === 2) ? ws : undefined;
    }, { timeoutMs: 5000, what: 'both workers registered' });
    const n = workers.find((w) => w.clientId === 'builder-host:0001');
    assert.ok(n, JSON.stringify(workers));
    assert.deepEqual(n.functions.sort(), ['image-delete:a-0000000001', 'image-upload:a-0000000001']);
    assert.equal(n.ip, '127.0.0.1');
    assert.ok(Number.isInteger(n.fd) && n.fd > 0);
    const a = workers.find((w) => w.functions.includes('anon-fn'));
    assert.equal(a?.clientId, '-');
  });

  void it('reads a `workers` reply that spans many TCP chunks', async () => {
    const worker = new GearmanWorker({ servers: [g.address], log, clientId: 'many-functions' });
    cleanup.add('worker', () => worker.stop());
    const names = Array.from({ length: 1500 }, (_, i) => `image-upload:some-long-diskimage-name-for-chunking-${String(i).padStart(10, '0')}`);
    for (const name of names) worker.register(name, async () => ({ type: 'complete' }));
    await worker.start();
    const mine = await waitFor(async () => {
      const w = (await adminWorkers(g.address)).find((x) => x.clientId === 'many-functions');
      return w?.functions.length === names.length ? w : undefined;
    }, { timeoutMs: 10_000, what: '1500 functions listed' });
    assert.deepEqual(mine.functions.sort(), [...names].sort());
  });

  void it('returns single-line replies and rejects ERR replies with GearmanServerError', async () => {
    assert.deepEqual(await adminCommand(g.address, 'version'), ['OK 1.1.20+ds']);
    assert.deepEqual(await adminCommand(g.address, 'create function admin-made'), ['OK']);
    await assert.rejects(adminCommand(g.address, 'no-such-command'), (e: unknown) => e instanceof GearmanServerError && e.code === 'UNKNOWN_COMMAND');
    await assert.rejects(adminCommand(g.address, 'status\nshutdown'), TypeError);
  });

  void it('fails with GearmanConnectionError when nothing listens', async () => {
    const port = await freePort();
    await assert.rejects(adminStatus({ host: '127.0.0.1', port }, { timeoutMs: 2000 }), GearmanConnectionError);
  });
});
