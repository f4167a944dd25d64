import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fn } from '../../lib/gearman/functions.js';
import type { GearmanClient } from '../../lib/gearman/client.js';
import { fakeDiskimage, runJob, testClient } from '../support/builder-env.js';
import { recordFault } from '../support/fault-report.js';
import { FaultSystem } from '../support/fault-system.js';
import { runningProcesses } from '../support/processes.js';

const N = 10_000;
const IN_FLIGHT = 64;
/** RSS growth allowed over the flood (after a warm-up of 1,000 jobs). */
const RSS_BOUND_KIB = 64 * 1024;

/** A small seeded PRNG (mulberry32); payload `i` uses seed `i`, so a failing one can be reproduced from its index. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TRAVERSAL = ['../../etc/passwd', 'base-0000000001/../../x', '/etc/shadow', '..', 'base-../../0000000001', 'base-0000000001\u0000', 'base-0000000001/', '%2e%2e%2fbase', 'base-00000000\n1', 'base-0000000001.raw'];
const WRONG = [5, -1, 1.5, true, null, [], ['base-0000000001'], {}, { id: 1 }, ''];

/** The `i`-th malformed job: a registered function of the builder and a payload every builder must refuse. */
function malformed(i: number, rand: () => number, buildId: string): { fn: string; data: string } {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const junk = (n: number): string => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rand() * 95))).join('');
  const kind = i % 10;
  const target = pick(['build', 'upload', 'delete'] as const);
  const name = target === 'build' ? fn.imageBuild('base') : target === 'upload' ? fn.imageUpload(buildId) : fn.imageDelete(buildId);
  if (kind === 0) return { fn: name, data: `{${junk(1 + Math.floor(rand() * 40))}` }; // not JSON
  if (kind === 1) return { fn: name, data: JSON.stringify(pick([5, 'x', [1, 2], true, 0.5, []])) }; // not an object
  if (kind === 2) return { fn: name, data: JSON.stringify({ pad: 'x'.repeat(65 * 1024 + Math.floor(rand() * 4096)) }) }; // oversized
  if (target === 'delete') return { fn: name, data: `[${junk(8)}` };
  if (target === 'build') {
    if (kind < 6) return { fn: name, data: JSON.stringify({ 'image-id': pick(TRAVERSAL) }) };
    if (kind < 8) return { fn: name, data: JSON.stringify({ 'image-id': pick(WRONG) }) };
    if (kind === 8) return { fn: name, data: JSON.stringify({ 'image-id': 'victim-0000000001' }) }; // another diskimage's id
    return { fn: name, data: JSON.stringify({ 'image-id': 'base-0000009999', created: pick(['yesterday', -5, 1.5, null, {}]) }) };
  }
  if (kind < 5) return { fn: name, data: JSON.stringify({ 'image-name': 'base' }) }; // no provider
  if (kind < 7) return { fn: name, data: JSON.stringify({ 'image-name': pick(WRONG), provider: pick(WRONG) }) };
  if (kind === 7) return { fn: name, data: JSON.stringify({ 'image-name': 'base', provider: pick(TRAVERSAL) }) };
  if (kind === 8) return { fn: name, data: JSON.stringify({ 'image-name': '../victim', provider: 'x' }) };
  return { fn: name, data: JSON.stringify({ 'image-name': 'base', provider: 'p', meta: pick([[1], 'x', { k: 5 }, { k: null }]) }) };
}

function vmRssKib(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? NaN);
}

/** Sends jobs `from`..`to`-1, `IN_FLIGHT` at a time; returns how each ended. */
async function flood(client: GearmanClient, from: number, to: number, buildId: string): Promise<Map<string, number>> {
  const ends = new Map<string, number>();
  let next = from;
  const lane = async (): Promise<void> => {
    while (next < to) {
      const i = next++;
      const job = malformed(i, prng(i), buildId);
      const r = await client.submit(job.fn, job.data, { createdTimeoutMs: 10_000 }).result;
      const key = r.type === 'fail' ? 'fail' : `${r.type} #${i} ${job.fn} ${job.data.slice(0, 60)}: ${(r.type === 'exception' ? r.data : Buffer.concat(r.warnings)).toString('utf8').slice(0, 200)}`;
      ends.set(key, (ends.get(key) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return ends;
}

describe('faults: malformed Gearman payloads', () => {
  let sys: FaultSystem | undefined;
  let client: GearmanClient | undefined;

  afterEach(async () => {
    await client?.stop();
    await sys?.stop();
    sys = client = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it(`answers ${N.toLocaleString('en')} malformed payloads with WORK_FAIL, keeps its RSS bounded and still builds`, { timeout: 300_000 }, async () => {
    sys = await FaultSystem.start({ diskimages: [fakeDiskimage('base', { formats: ['raw'] })] });
    const b = await sys.startBuilder();
    sys.startServer();
    const s = await sys.settled();
    const before = await sys.readyIds();
    const buildId = s.builds[0]!.id;
    client = await testClient(sys.gearmand.port);
    const t0 = Date.now();
    const warm = await flood(client, 0, 1000, buildId);
    const rss0 = vmRssKib(b.process!.pid);
    const rest = await flood(client, 1000, N, buildId);
    const rss1 = vmRssKib(b.process!.pid);
    const floodMs = Date.now() - t0;
    const ends = new Map(warm);
    for (const [k, v] of rest) ends.set(k, (ends.get(k) ?? 0) + v);
    const failed = ends.get('fail') ?? 0;
    // Still builds: a valid build job right after the flood (the server deletes it as a stray afterwards).
    const t1 = Date.now();
    const built = await runJob(client, fn.imageBuild('base'), { 'image-id': 'base-0000000100' }, { unique: 'base-0000000100' });
    const buildMs = Date.now() - t1;
    const audit = await sys.audit(before);
    const growth = rss1 - rss0;
    recordFault({
      scenario: '10,000 malformed Gearman payloads to a builder', runs: N, recovered: failed, lost: audit.lost,
      leaked: audit.leaked + (growth > RSS_BOUND_KIB ? 1 : 0), recoverMs: buildMs,
      notes: `${failed} WORK_FAIL of ${N} in ${(floodMs / 1000).toFixed(1)} s; builder RSS ${Math.round(rss0 / 1024)} → ${Math.round(rss1 / 1024)} MiB; a valid build after took ${buildMs} ms`,
    });
    assert.deepEqual([...ends.keys()].filter((k) => k !== 'fail'), [], 'every malformed job ended with WORK_FAIL');
    assert.equal(failed, N);
    assert.ok(growth <= RSS_BOUND_KIB, `builder RSS grew by ${growth} KiB over the flood (bound ${RSS_BOUND_KIB})`);
    assert.equal(built.type, 'complete', `a valid build after the flood completes (${built.message})`);
    assert.ok(b.process!.alive(), 'the builder is still running');
    assert.deepEqual(audit.details, []);
  });
});
