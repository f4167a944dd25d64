/**
 * Gearman round-trip benchmark: our GearmanClient + GearmanWorker against a minimal raw-socket
 * client + worker written inline below (the reference), through one local gearmand.
 *
 *   node --import tsx bench/gearman-roundtrip.ts [jobs=1000] [rounds=3]
 *
 * seq: submit, wait for WORK_COMPLETE, submit the next. conc: submit all, then wait for all
 * (the worker still runs one job at a time). Rates are the median of `rounds`, after warm-up.
 */
import net from 'node:net';
import { GearmanClient } from '../lib/gearman/client.js';
import { GearmanWorker } from '../lib/gearman/worker.js';
import { startGearmand } from '../test/support/gearmand.js';

const JOBS = Number(process.argv[2] ?? 1000);
const ROUNDS = Number(process.argv[3] ?? 3);
const WARMUP = 200;

// ---------------------------------------------------------------- the reference (minimal raw)

function frame(type: number, args: string[]): Buffer {
  const body = Buffer.from(args.join('\0'));
  const h = Buffer.alloc(12);
  h.write('\0REQ', 0, 'latin1');
  h.writeUInt32BE(type, 4);
  h.writeUInt32BE(body.length, 8);
  return Buffer.concat([h, body]);
}

/** Calls `on(type, body)` for every whole packet read from `sock`. */
function readPackets(sock: net.Socket, on: (type: number, body: Buffer) => void): void {
  let buf: Buffer = Buffer.alloc(0);
  sock.on('data', (chunk: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    while (buf.length >= 12) {
      const len = buf.readUInt32BE(8);
      if (buf.length < 12 + len) break;
      on(buf.readUInt32BE(4), buf.subarray(12, 12 + len));
      buf = buf.subarray(12 + len);
    }
  });
}

async function rawConnect(port: number): Promise<net.Socket> {
  const sock = net.connect({ host: '127.0.0.1', port });
  sock.setNoDelay(true);
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  return sock;
}

/** Minimal worker: CAN_DO, then GRAB_JOB_UNIQ → (JOB_ASSIGN_UNIQ → WORK_COMPLETE | NO_JOB → PRE_SLEEP → NOOP) → GRAB… */
async function rawWorker(port: number, fn: string): Promise<() => void> {
  const sock = await rawConnect(port);
  readPackets(sock, (type, body) => {
    if (type === 31) {
      const parts = body.toString().split('\0');
      sock.write(frame(13, [parts[0] as string, parts.slice(3).join('\0')]));
      sock.write(frame(30, []));
    } else if (type === 10) sock.write(frame(4, []));
    else if (type === 6) sock.write(frame(30, []));
  });
  sock.write(frame(1, [fn]));
  sock.write(frame(30, []));
  return () => sock.destroy();
}

/** Minimal client: SUBMIT_JOB, FIFO for JOB_CREATED, handle → resolver for WORK_COMPLETE. */
async function rawClient(port: number): Promise<{ submit(fn: string, data: string): Promise<string>; close(): void }> {
  const sock = await rawConnect(port);
  const created: Array<(h: string) => void> = [];
  const done = new Map<string, (d: string) => void>();
  readPackets(sock, (type, body) => {
    const text = body.toString();
    if (type === 8) created.shift()?.(text);
    else if (type === 13) {
      const i = text.indexOf('\0');
      const h = text.slice(0, i);
      done.get(h)?.(text.slice(i + 1));
      done.delete(h);
    }
  });
  return {
    submit: (fn, data) => new Promise<string>((resolve) => {
      created.push((h) => done.set(h, resolve));
      sock.write(frame(7, [fn, '', data]));
    }),
    close: () => sock.destroy(),
  };
}

// ---------------------------------------------------------------- measurement

type Submit = (i: number) => Promise<unknown>;

async function rate(submit: Submit, mode: 'seq' | 'conc'): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await submit(i);
  const t0 = process.hrtime.bigint();
  if (mode === 'seq') for (let i = 0; i < JOBS; i++) await submit(i);
  else await Promise.all(Array.from({ length: JOBS }, (_, i) => submit(i)));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  return (JOBS * 1000) / ms;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

async function main(): Promise<void> {
  const g = await startGearmand({ verbose: 'ERROR' });
  try {
    const worker = new GearmanWorker({ servers: [g.address] });
    worker.register('bench-ours', async (job) => ({ type: 'complete', data: job.data }));
    const client = new GearmanClient({ servers: [g.address] });
    await worker.start();
    await client.start();
    const ours: Submit = async (i) => {
      const r = await client.submit('bench-ours', `job-${i}`).result;
      if (r.type !== 'complete') throw new Error(`job ${i}: ${r.type}`);
    };
    const stopRawWorker = await rawWorker(g.port, 'bench-raw');
    const raw = await rawClient(g.port);
    const reference: Submit = (i) => raw.submit('bench-raw', `job-${i}`);

    const rows: Array<{ mode: 'seq' | 'conc'; ours: number; reference: number }> = [];
    for (const mode of ['seq', 'conc'] as const) {
      const o: number[] = [];
      const r: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        o.push(await rate(ours, mode));
        r.push(await rate(reference, mode));
      }
      rows.push({ mode, ours: median(o), reference: median(r) });
    }
    console.log(`gearman round trips, ${JOBS} tiny jobs, median of ${ROUNDS} rounds (gearmand 127.0.0.1:${g.port})`);
    console.log('mode   ours jobs/s   reference jobs/s   ours/reference');
    for (const row of rows) {
      console.log(`${row.mode.padEnd(6)} ${row.ours.toFixed(0).padStart(11)} ${row.reference.toFixed(0).padStart(18)} ${(row.ours / row.reference).toFixed(2).padStart(16)}`);
    }
    raw.close();
    stopRawWorker();
    await client.stop();
    await worker.stop();
  } finally {
    await g.stop();
  }
}

await main();
