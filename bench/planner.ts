/**
 * Image-lifecycle planner benchmark: one pure `plan()` pass over a large store.
 *
 *   node --import tsx bench/planner.ts [diskimages=500] [providers=50] [runs=10]
 *
 * Every openstack provider lists every diskimage; each diskimage has 2 ready builds, and
 * each build 2 ready uploads to every provider (500 × 50 → 1,000 builds, 100,000 uploads),
 * so a pass keeps the 2 newest uploads per image-provider and deletes the other 50,000.
 * Prints p50/max of `runs` timed passes after warm-up (target p50 < 200 ms) and the heap
 * the snapshot and the plan take; then the same at 1/2 and 1/4 of the diskimages, with the
 * ratios that show time and memory grow linearly with the records.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parseConfig } from '../lib/config/load.js';
import { fn } from '../lib/gearman/functions.js';
import type { BuildRecord, UploadRecord } from '../lib/store/models.js';
import type { Plan, PlannerSnapshot } from '../server/image-lifecycle/actions.js';
import { plan } from '../server/image-lifecycle/planner.js';

const DISKIMAGES = Number(process.argv[2] ?? 500);
const PROVIDERS = Number(process.argv[3] ?? 50);
const RUNS = Number(process.argv[4] ?? 10);
const WARMUP = 3;
const TARGET_MS = 200;

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMiB = (): number => {
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

function makeSnapshot(diskimages: number, providers: number): PlannerSnapshot {
  const names = Array.from({ length: diskimages }, (_, i) => `image-${i}`);
  const config = parseConfig(JSON.stringify({
    diskimages: names.map((name) => ({ name })),
    providers: Array.from({ length: providers }, (_, i) => ({ name: `cloud-${i}`, cloud: 'c', diskimages: names.map((name) => ({ name })) })),
  }), 'bench.yaml');
  const now = Date.UTC(2024, 0, 1);
  const builds: BuildRecord[] = [];
  const uploads: UploadRecord[] = [];
  const registered = new Map<string, string[]>();
  let seq = 0;
  let uploadSeq = 0;
  for (const d of names) {
    registered.set(fn.imageBuild(d), ['builder:1']);
    for (let b = 0; b < 2; b++) {
      const stateTime = now - (2 - b) * 3_600_000;
      const id = `${d}-${String(++seq).padStart(10, '0')}`;
      builds.push({
        id, diskimage: d, state: 'ready', stateTime, created: stateTime - 600_000, builderHostname: 'builder', builderId: '1',
        formats: ['qcow2'], files: [{ format: 'qcow2', size: 1 << 30, sha256: '0'.repeat(64) }], reason: null, progress: null,
      });
      registered.set(fn.imageUpload(id), ['builder:1']);
      for (let p = 0; p < providers; p++) {
        for (let u = 0; u < 2; u++) {
          const n = ++uploadSeq;
          uploads.push({
            id: String(n).padStart(10, '0'), buildId: id, diskimage: d, provider: `cloud-${p}`, imageName: d, state: 'ready',
            stateTime: stateTime + 60_000 * (u + 1), created: stateTime, externalId: `ext-${n}`, externalName: `${d}-${n}`,
            format: 'qcow2', reason: null, progress: null,
          });
        }
      }
    }
  }
  return {
    now, config, builds, uploads, buildRequests: [], pauses: [], registered, absentSince: new Map(), removedSince: new Map(), unknownSince: new Map(), unknownSuspect: new Set(),
    inFlight: { builds: new Set(), uploads: new Set(), buildDeletes: new Set(), uploadDeletes: new Set() },
  };
}

interface Result {
  diskimages: number;
  builds: number;
  uploads: number;
  actions: number;
  p50: number;
  max: number;
  snapshotMiB: number;
  planMiB: number;
}

function measure(diskimages: number): Result {
  const before = heapMiB();
  const snap = makeSnapshot(diskimages, PROVIDERS);
  const withSnapshot = heapMiB();
  for (let i = 0; i < WARMUP; i++) plan(snap);
  const times: number[] = [];
  let last: Plan | undefined;
  for (let i = 0; i < RUNS; i++) {
    last = undefined;
    const t0 = process.hrtime.bigint();
    last = plan(snap);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const withPlan = heapMiB();
  times.sort((a, b) => a - b);
  return {
    diskimages, builds: snap.builds.length, uploads: snap.uploads.length, actions: last?.actions.length ?? 0,
    p50: times[Math.floor((times.length - 1) / 2)] as number, max: times[times.length - 1] as number,
    snapshotMiB: withSnapshot - before, planMiB: withPlan - withSnapshot,
  };
}

const full = measure(DISKIMAGES);
console.log(`planner: ${full.diskimages} diskimages × ${PROVIDERS} providers = ${full.builds} builds, ${full.uploads} uploads → ${full.actions} actions`);
console.log(`  plan() p50 ${full.p50.toFixed(1)} ms, max ${full.max.toFixed(1)} ms over ${RUNS} runs after ${WARMUP} warm-up (target p50 < ${TARGET_MS} ms: ${full.p50 < TARGET_MS ? 'met' : 'MISSED'})`);
console.log(`  heap used: ${full.snapshotMiB.toFixed(1)} MiB before (the snapshot), +${full.planMiB.toFixed(1)} MiB after (the plan it returned)`);

console.log('scaling (ratio = this size / full size; linear ≈ the record ratio)');
console.log('diskimages   uploads    p50 ms   max ms   snapshot MiB   plan MiB   time ratio   plan-heap ratio');
for (const r of [full, measure(Math.round(DISKIMAGES / 2)), measure(Math.round(DISKIMAGES / 4))]) {
  console.log([
    String(r.diskimages).padStart(10), String(r.uploads).padStart(9), r.p50.toFixed(1).padStart(9), r.max.toFixed(1).padStart(8),
    r.snapshotMiB.toFixed(1).padStart(14), r.planMiB.toFixed(1).padStart(10),
    (r.p50 / full.p50).toFixed(2).padStart(12), (r.planMiB / full.planMiB).toFixed(2).padStart(17),
  ].join(' '));
}
