/**
 * Gearman round-trip benchmark: our GearmanClient + GearmanWorker against a minimal raw-socket
 * client + worker written inline below (the reference), through one local gearmand.
 *
 *   node --import tsx bench/gearman-roundtrip.ts [jobs=1000] [rounds=5] [only=ours|reference] [--log=info]
 *
 * seq: submit, wait for WORK_COMPLETE, submit the next. conc: submit all, then wait for all
 * (the worker still runs one job at a time). Rates are the median of `rounds`, after warm-up.
 * Each round runs ours and the reference back to back (alternating which goes first), and the
 * ratio shown is the median of those per-round ratios: on a shared machine, load changes
 * between rounds more than within a pair.
 * `only` runs one side alone (for `node --cpu-prof`; see bench/cpuprofile-top.ts). Ours logs
 * to a silent logger unless `--log=<level>` gives it a real root logger at that level (JSON
 * lines to /dev/null), as the daemons have.
 */
import { createWriteStream } from 'node:fs';
import net from 'node:net';
import { GearmanClient } from '../lib/gearman/client.js';
import { GearmanWorker } from '../lib/gearman/worker.js';
import { createRootLogger } from '../lib/log.js';
import { startGearmand } from '../test/support/gearmand.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const LOG_LEVEL = process.argv.find((a) => a.startsWith('--log='))?.slice(6);
const JOBS = Number(args[0] ?? 1000);
const ROUNDS = Number(args[1] ?? 5);
const ONLY = args[2] as 'ours' | 'reference' | undefined;
const WARMUP = 1000;

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
type Side = 'ours' | 'reference';
/** Wall time and this process's CPU time (client + worker, both sides run here) for some jobs. */
interface Sample { ms: number; cpuUs: number; jobs: number }

async function measure(submit: Submit, mode: 'seq' | 'conc', jobs: number): Promise<Sample> {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  if (mode === 'seq') for (let i = 0; i < jobs; i++) await submit(i);
  else await Promise.all(Array.from({ length: jobs }, (_, i) => submit(i)));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  return { ms, cpuUs: c.user + c.system, jobs };
}

/**
 * One round: both sides run JOBS jobs, interleaved in slices (seq: 10 slices; conc: one batch,
 * since slicing would change how many jobs are in flight) with alternating order, so both see
 * the same load on a shared machine.
 */
async function round(sides: Record<Side, Submit>, mode: 'seq' | 'conc', n: number): Promise<Record<Side, Sample>> {
  const slices = mode === 'seq' ? 10 : 1;
  const out: Record<Side, Sample> = { ours: { ms: 0, cpuUs: 0, jobs: 0 }, reference: { ms: 0, cpuUs: 0, jobs: 0 } };
  for (let k = 0; k < slices; k++) {
    const order: Side[] = (n + k) % 2 === 0 ? ['ours', 'reference'] : ['reference', 'ours'];
    for (const side of order) {
      if (ONLY && ONLY !== side) continue;
      const s = await measure(sides[side], mode, Math.ceil(JOBS / slices));
      out[side].ms += s.ms;
      out[side].cpuUs += s.cpuUs;
      out[side].jobs += s.jobs;
    }
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

async function main(): Promise<void> {
  const g = await startGearmand({ verbose: 'ERROR' });
  try {
    const log = LOG_LEVEL ? createRootLogger({ level: LOG_LEVEL, format: 'json', stream: createWriteStream('/dev/null') }) : undefined;
    const worker = new GearmanWorker({ servers: [g.address], log });
    worker.register('bench-ours', async (job) => ({ type: 'complete', data: job.data }));
    const client = new GearmanClient({ servers: [g.address], log });
    await worker.start();
    await client.start();
    const ours: Submit = async (i) => {
      const r = await client.submit('bench-ours', `job-${i}`).result;
      if (r.type !== 'complete') throw new Error(`job ${i}: ${r.type}`);
    };
    const stopRawWorker = await rawWorker(g.port, 'bench-raw');
    const raw = await rawClient(g.port);
    const reference: Submit = (i) => raw.submit('bench-raw', `job-${i}`);
    const sides = { ours, reference };
    // warm-up (both sides, both modes), so the JIT has settled before the first round
    for (const side of ['ours', 'reference'] as const) {
      if (ONLY && ONLY !== side) continue;
      await measure(sides[side], 'seq', WARMUP);
      await measure(sides[side], 'conc', WARMUP);
    }

    console.log(`gearman round trips, ${JOBS} tiny jobs per side per round, ${ROUNDS} rounds (gearmand 127.0.0.1:${g.port}, ours logging ${LOG_LEVEL ?? 'silently'})`);
    console.log('mode   ours jobs/s   reference jobs/s   ours/reference (median; per round)        CPU us/job ours  reference');
    for (const mode of ['seq', 'conc'] as const) {
      const rounds: Array<Record<Side, Sample>> = [];
      for (let n = 0; n < ROUNDS; n++) rounds.push(await round(sides, mode, n));
      const rate = (s: Sample): number => (s.jobs * 1000) / s.ms;
      const ratios = rounds.map((r) => rate(r.ours) / rate(r.reference));
      const cpu = (side: Side): string => median(rounds.map((r) => r[side].cpuUs / r[side].jobs)).toFixed(0);
      console.log([
        mode.padEnd(6),
        median(rounds.map((r) => rate(r.ours))).toFixed(0).padStart(11),
        median(rounds.map((r) => rate(r.reference))).toFixed(0).padStart(18),
        median(ratios).toFixed(2).padStart(17),
        `; ${ratios.map((x) => x.toFixed(2)).join(' ')}`.padEnd(26),
        cpu('ours').padStart(17),
        cpu('reference').padStart(10),
      ].join(' '));
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
