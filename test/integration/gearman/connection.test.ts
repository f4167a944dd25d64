import assert from 'node:assert/strict';
import net from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { GearmanConnectionError } from '../../../lib/errors.js';
import { GearmanConnection } from '../../../lib/gearman/connection.js';
import { encode, PacketDecoder, PacketType as T, type Packet } from '../../../lib/gearman/protocol.js';
import { Releasers, sleep, waitFor } from '../../../lib/lifecycle.js';
import { testLogger } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';

const log = testLogger();

/** A TCP server whose behaviour per accepted socket is scripted. */
async function tcpServer(onSocket: (s: net.Socket) => void): Promise<{ port: number; accepted: number[]; close(): Promise<void> }> {
  const accepted: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    accepted.push(Date.now());
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    onSocket(s);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

void describe('GearmanConnection', () => {
  const cleanup = new Releasers();

  afterEach(async () => {
    await cleanup.releaseAll();
    assert.deepEqual(runningProcesses(), []);
  });

  void it('reconnects with capped exponential backoff, and close() stops it', async () => {
    const srv = await tcpServer((s) => s.destroy());
    cleanup.add('server', () => srv.close());
    const conn = new GearmanConnection({ server: { host: '127.0.0.1', port: srv.port }, log, reconnect: { initialMs: 20, maxMs: 80 } });
    cleanup.add('connection', () => conn.close());
    let connects = 0;
    let disconnects = 0;
    conn.on('connected', () => connects++);
    conn.on('disconnected', (reason) => {
      disconnects++;
      assert.ok(reason instanceof GearmanConnectionError);
    });
    conn.open();
    await waitFor(() => srv.accepted.length >= 6, { timeoutMs: 5000, what: 'six connection attempts' });
    const gaps = srv.accepted.slice(1, 6).map((t, i) => t - (srv.accepted[i] as number));
    // timers never fire early: each gap is at least the jittered backoff (≥ 80 % of the base)
    gaps.forEach((gap, i) => assert.ok(gap >= 0.8 * Math.min(80, 20 * 2 ** i) - 2, `gap ${i} was ${gap} ms: ${gaps.join(', ')}`));
    await conn.close();
    const attempts = srv.accepted.length;
    await sleep(300);
    assert.equal(srv.accepted.length, attempts, 'no attempts after close()');
    await waitFor(() => connects === disconnects, { timeoutMs: 1000, what: 'every connect paired with a disconnect' });
    assert.equal(conn.connected, false);
  });

  void it('emits connected, packet and disconnected; send() is false while down', async () => {
    const received: Packet[] = [];
    const srv = await tcpServer((s) => {
      const d = new PacketDecoder({ accept: 'REQ' });
      s.on('data', (c: Buffer) => received.push(...d.push(c)));
      s.write(Buffer.concat([encode(T.NOOP, [], 'RES'), encode(T.ECHO_RES, ['hi'], 'RES')]));
    });
    cleanup.add('server', () => srv.close());
    const conn = new GearmanConnection({ server: { host: '127.0.0.1', port: srv.port }, log });
    cleanup.add('connection', () => conn.close());
    const packets: string[] = [];
    conn.on('packet', (p) => packets.push(p.name));
    const connected = new Promise<number>((resolve) => conn.once('connected', resolve));
    assert.equal(conn.send(encode(T.ECHO_REQ, ['early'])), false);
    conn.open();
    assert.equal(await connected, 1);
    assert.equal(conn.generation, 1);
    await waitFor(() => packets.length === 2, { timeoutMs: 2000, what: 'two packets' });
    assert.deepEqual(packets, ['NOOP', 'ECHO_RES']);
    assert.equal(conn.send(encode(T.ECHO_REQ, ['ping'])), true);
    await waitFor(() => received.some((p) => p.name === 'ECHO_REQ'), { timeoutMs: 2000, what: 'ECHO_REQ at the server' });
    const disconnected = new Promise<Error>((resolve) => conn.once('disconnected', resolve));
    const c1 = conn.close();
    assert.equal(conn.close(), c1);
    await c1;
    assert.match((await disconnected).message, /closed/);
    assert.equal(conn.send(encode(T.ECHO_REQ, ['late'])), false);
  });

  void it('sends the packets of one tick in order, small ones together and a large one intact, and flushes them on close()', async () => {
    const received: Packet[] = [];
    const chunks: number[] = [];
    const srv = await tcpServer((s) => {
      const d = new PacketDecoder({ accept: 'REQ' });
      s.on('data', (c: Buffer) => {
        chunks.push(c.length);
        received.push(...d.push(c));
      });
    });
    cleanup.add('server', () => srv.close());
    const conn = new GearmanConnection({ server: { host: '127.0.0.1', port: srv.port }, log });
    cleanup.add('connection', () => conn.close());
    const connected = new Promise<number>((resolve) => conn.once('connected', resolve));
    conn.open();
    await connected;
    for (let i = 0; i < 3; i++) assert.equal(conn.send(encode(T.ECHO_REQ, [`small-${i}`])), true);
    await waitFor(() => received.length === 3, { timeoutMs: 2000, what: 'three small packets' });
    assert.equal(chunks.length, 1, `three packets sent in one tick arrived in ${chunks.length} reads`);
    const big = Buffer.alloc(200 * 1024, 7);
    conn.send(encode(T.ECHO_REQ, ['before']));
    conn.send(encode(T.ECHO_REQ, [big]));
    conn.send(encode(T.ECHO_REQ, ['after']));
    // close() in the same tick still delivers what was sent before it
    await conn.close();
    await waitFor(() => received.length === 6, { timeoutMs: 2000, what: 'the large batch' });
    assert.deepEqual(received.map((p) => p.args[0]?.length === big.length ? 'big' : p.args[0]?.toString()), ['small-0', 'small-1', 'small-2', 'before', 'big', 'after']);
    assert.ok(received[4]?.args[0]?.equals(big));
  });

  void it('gives up a TLS handshake that never completes and retries', async () => {
    const srv = await tcpServer(() => undefined); // accepts, then stays silent
    cleanup.add('server', () => srv.close());
    const conn = new GearmanConnection({
      server: { host: '127.0.0.1', port: srv.port, tls: true }, log, connectTimeoutMs: 100, reconnect: { initialMs: 10, maxMs: 20 },
    });
    cleanup.add('connection', () => conn.close());
    let connects = 0;
    conn.on('connected', () => connects++);
    conn.open();
    conn.open();
    await waitFor(() => srv.accepted.length >= 3, { timeoutMs: 5000, what: 'three attempts' });
    assert.equal(connects, 0);
    const gaps = srv.accepted.slice(1, 3).map((t, i) => t - (srv.accepted[i] as number));
    assert.ok(gaps.every((g) => g >= 100), `attempts ${gaps.join(', ')} ms apart`);
  });
});
