/**
 * Behaviour a real gearmand will not produce on demand: a scripted server on top of our codec
 * sends ERROR replies, hostile and malformed packets, and garbage.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { GearmanConnectionError, GearmanServerError } from '../../../lib/errors.js';
import { GearmanClient } from '../../../lib/gearman/client.js';
import { encode, PacketDecoder, PacketType as T, type Packet } from '../../../lib/gearman/protocol.js';
import { GearmanWorker } from '../../../lib/gearman/worker.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { testLogger } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';

const log = testLogger();

interface Seen { conn: number; name: string; args: string[] }

/** A scripted Gearman server: `onPacket` answers each request; every request is recorded. */
async function fakeServer(onPacket: (p: Packet, reply: (b: Buffer) => void, conn: number) => void): Promise<{
  port: number; seen: Seen[]; connections(): number; broadcast(b: Buffer): void; close(): Promise<void>;
}> {
  const seen: Seen[] = [];
  const sockets = new Set<net.Socket>();
  let count = 0;
  const server = net.createServer((sock) => {
    const conn = ++count;
    sockets.add(sock);
    const decoder = new PacketDecoder({ accept: 'REQ' });
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => undefined);
    sock.on('data', (chunk: Buffer) => {
      for (const p of decoder.push(chunk)) {
        seen.push({ conn, name: p.name, args: p.args.map((a) => a.toString('latin1')) });
        onPacket(p, (b) => sock.write(b), conn);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    seen,
    connections: () => count,
    broadcast: (b) => { for (const s of sockets) s.write(b); },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

const res = (type: number, args: Array<string | Buffer> = []): Buffer => encode(type, args, 'RES');

function rawRes(type: number, body: string): Buffer {
  const h = Buffer.alloc(12);
  h.write('\0RES', 0, 'latin1');
  h.writeUInt32BE(type, 4);
  h.writeUInt32BE(Buffer.byteLength(body, 'latin1'), 8);
  return Buffer.concat([h, Buffer.from(body, 'latin1')]);
}

void describe('gearman layer against a scripted server', () => {
  const cleanup = new Releasers();

  afterEach(async () => {
    await cleanup.releaseAll();
    assert.deepEqual(runningProcesses(), []);
  });

  void it('rejects exactly the submit an ERROR answers; jobs around it complete', async () => {
    let n = 0;
    const srv = await fakeServer((p, reply) => {
      if (p.type === T.OPTION_REQ) reply(res(T.OPTION_RES, [p.args[0] as Buffer]));
      if (p.type !== T.SUBMIT_JOB) return;
      if (p.args[1]?.toString() === 'bad') return reply(res(T.ERROR, ['ARGUMENT_TOO_LARGE', 'Unique value too large']));
      const handle = `H:fake:${++n}`;
      reply(res(T.JOB_CREATED, [handle]));
      reply(res(T.WORK_COMPLETE, [handle, p.args[2] as Buffer]));
    });
    cleanup.add('fake server', () => srv.close());
    const client = new GearmanClient({ servers: [{ host: '127.0.0.1', port: srv.port }], log });
    cleanup.add('client', () => client.stop());
    await client.start();
    const [a, b, c] = [client.submit('f', 'one'), client.submit('f', 'two', { unique: 'bad' }), client.submit('f', 'three')];
    assert.equal((await a.result).type, 'complete');
    await assert.rejects(b.result, (e: unknown) => e instanceof GearmanServerError && e.code === 'ARGUMENT_TOO_LARGE');
    await assert.rejects(b.handle, GearmanServerError);
    const rc = await c.result;
    assert.equal(rc.type === 'complete' && rc.data.toString(), 'three');
    assert.deepEqual(srv.seen.filter((s) => s.name === 'OPTION_REQ').map((s) => s.args), [['exceptions']]);
  });

  void it('resets the connection and fails the job when a reply does not match the request', async () => {
    const srv = await fakeServer((p, reply) => {
      if (p.type === T.OPTION_REQ) reply(res(T.OPTION_RES, ['exceptions']));
      if (p.type === T.SUBMIT_JOB) reply(res(T.STATUS_RES, ['H:1', '1', '1', '0', '0']));
    });
    cleanup.add('fake server', () => srv.close());
    const client = new GearmanClient({ servers: [{ host: '127.0.0.1', port: srv.port }], log, reconnect: { initialMs: 20, maxMs: 50 } });
    cleanup.add('client', () => client.stop());
    await client.start();
    await assert.rejects(client.submit('f', '').result, GearmanConnectionError);
    await waitFor(() => srv.connections() >= 2, { timeoutMs: 2000, what: 'client reconnected' });
  });

  void it('the worker survives hostile and malformed packets, then garbage, and keeps serving', async () => {
    const script: Buffer[][] = [
      [rawRes(999, 'what is this'), res(T.ERROR, ['JOB_NOT_FOUND', 'Job given in work result not found']), res(T.JOB_ASSIGN_UNIQ, ['H:1', 'unregistered', 'u1', 'd'])],
      [rawRes(T.JOB_ASSIGN_UNIQ, 'H:2')],
      [res(T.WORK_COMPLETE, ['H:bogus', 'x']), res(T.STATUS_RES, ['H:1', '0', '0', '0', '0']), res(T.JOB_ASSIGN_UNIQ, ['H:3', 'ok', 'u3', 'payload'])],
    ];
    const srv = await fakeServer((p, reply) => {
      if (p.type !== T.GRAB_JOB_UNIQ) return;
      const next = script.shift();
      if (next) for (const b of next) reply(b);
      else reply(res(T.NO_JOB));
    });
    cleanup.add('fake server', () => srv.close());
    const worker = new GearmanWorker({ servers: [{ host: '127.0.0.1', port: srv.port }], log, reconnect: { initialMs: 20, maxMs: 50 } });
    cleanup.add('worker', () => worker.stop());
    worker.register('ok', async (job) => ({ type: 'complete', data: Buffer.concat([job.data, Buffer.from('!')]) }));
    await worker.start();

    const sent = (name: string): string[][] => srv.seen.filter((s) => s.name === name).map((s) => s.args);
    await waitFor(() => sent('PRE_SLEEP').length > 0, { timeoutMs: 5000, what: 'worker went to sleep after the script' });
    assert.deepEqual(sent('WORK_FAIL'), [['H:1'], ['H:2']]);
    assert.deepEqual(sent('WORK_COMPLETE'), [['H:3', 'payload!']]);
    assert.equal(worker.inFlight(), 0);

    srv.broadcast(Buffer.from('this is not gearman at all'));
    await waitFor(() => srv.seen.some((s) => s.conn === 2 && s.name === 'CAN_DO'), { timeoutMs: 5000, what: 'worker reconnected and re-registered' });
    assert.deepEqual(srv.seen.filter((s) => s.conn === 2).slice(0, 2).map((s) => s.name), ['RESET_ABILITIES', 'CAN_DO']);
  });
  void it('drops a connection that leaves GRAB_JOB_UNIQ unanswered, and grabs again after reconnecting', async () => {
    const srv = await fakeServer((p, reply, conn) => {
      if (p.type === T.GRAB_JOB_UNIQ && conn > 1) reply(res(T.NO_JOB));
    });
    cleanup.add('fake server', () => srv.close());
    const worker = new GearmanWorker({ servers: [{ host: '127.0.0.1', port: srv.port }], log, grabTimeoutMs: 100, reconnect: { initialMs: 20, maxMs: 50 } });
    cleanup.add('worker', () => worker.stop());
    worker.register('f', async () => ({ type: 'complete' }));
    await worker.start();
    await waitFor(() => srv.seen.some((s) => s.conn === 2 && s.name === 'PRE_SLEEP'), { timeoutMs: 5000, what: 'second connection grabbed and slept' });
    assert.equal(srv.seen.filter((s) => s.conn === 1 && s.name === 'GRAB_JOB_UNIQ').length, 1);
  });
});
