import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import net from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { GearmanClient } from '../../../lib/gearman/client.js';
import { encode, PacketDecoder, PacketType as T, type Packet } from '../../../lib/gearman/protocol.js';
import { GearmanWorker } from '../../../lib/gearman/worker.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, testLogger, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses, startProcess } from '../../support/processes.js';

const log = testLogger();
const run = promisify(execFile);

/** A bare socket speaking the codec, with no OPTION_REQ exceptions (like old clients). */
async function rawClient(port: number): Promise<{ send(b: Buffer): void; next(): Promise<Packet>; bytes(): Buffer; close(): void }> {
  const sock = net.connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  const decoder = new PacketDecoder({ accept: 'RES' });
  const queue: Packet[] = [];
  const received: Buffer[] = [];
  sock.on('data', (c: Buffer) => { received.push(c); queue.push(...decoder.push(c)); });
  return {
    send: (b) => { sock.write(b); },
    async next() {
      await waitFor(() => queue.length > 0 || undefined, { timeoutMs: 5000, what: 'a packet from gearmand', intervalMs: 5 });
      return queue.shift() as Packet;
    },
    bytes: () => Buffer.concat(received),
    close: () => { sock.destroy(); },
  };
}

void describe('interop with Debian\'s libgearman CLI and plain clients', () => {
  let g: GearmandHandle;
  const cleanup = new Releasers();

  before(async () => { g = await startGearmand(); });
  afterEach(async () => {
    await cleanup.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), [`gearmand:${g.port}`]);
  });
  after(async () => {
    await g.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  void it('serves `gearman -f reverse abc` (the C client) with our worker', async () => {
    const worker = new GearmanWorker({ servers: [g.address], log });
    cleanup.add('worker', () => worker.stop());
    worker.register('reverse', async (job) => ({ type: 'complete', data: [...job.data.toString()].reverse().join('') }));
    await worker.start();
    const { stdout } = await run('gearman', ['-h', '127.0.0.1', '-p', String(g.port), '-f', 'reverse', 'abc'], { timeout: 10_000 });
    assert.equal(stdout.trim(), 'cba');
  });

  void it('has our job served by `gearman -w -f rev -- rev` (the C worker)', async () => {
    const cli = startProcess('gearman-worker-cli', 'gearman', ['-w', '-h', '127.0.0.1', '-p', String(g.port), '-f', 'rev', '--', 'rev']);
    cleanup.add('gearman -w', () => cli.stop(2000));
    await waitFor(async () => (await adminWorkers(g.address)).some((w) => w.functions.includes('rev')), { timeoutMs: 5000, what: 'CLI worker registered' });
    const client = new GearmanClient({ servers: [g.address], log });
    cleanup.add('client', () => client.stop());
    await client.start();
    const res = await client.submit('rev', 'hello\n', { unique: 'cli-1' }).result;
    assert.equal(res.type, 'complete');
    assert.equal(res.type === 'complete' && res.data.toString().trim(), 'olleh');
  });

  void it('a client without the exceptions option gets WORK_FAIL (NUL-terminated handle, stripped) for our exception', async () => {
    const worker = new GearmanWorker({ servers: [g.address], log });
    cleanup.add('worker', () => worker.stop());
    worker.register('throws', async () => ({ type: 'exception', message: 'bug' }));
    await worker.start();
    const raw = await rawClient(g.port);
    cleanup.add('raw client', () => raw.close());
    raw.send(encode(T.SUBMIT_JOB, ['throws', '', '']));
    const created = await raw.next();
    assert.equal(created.name, 'JOB_CREATED');
    const fail = await raw.next();
    assert.equal(fail.name, 'WORK_FAIL');
    const handle = created.args[0]?.toString('latin1') ?? '';
    assert.equal(fail.args[0]?.toString('latin1'), handle);
    // on the wire, gearmand's WORK_FAIL body is the handle plus a NUL
    const wire = raw.bytes().subarray(12 + handle.length);
    assert.equal(wire.readUInt32BE(4), T.WORK_FAIL);
    assert.deepEqual(wire.subarray(12), Buffer.from(`${handle}\0`, 'latin1'));
  });
});
