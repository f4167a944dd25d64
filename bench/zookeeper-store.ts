/**
 * ZooKeeper store benchmark, with SQLite beside it for scale.
 *
 *   node --import tsx bench/zookeeper-store.ts [creates=1000] [builds=200] [uploads=4000] [passes=20] [--zk-fsync]
 *
 * 1. Write rate: `creates` sequential createBuild, then createNode calls, on each store,
 *    after 300 untimed warm-up creates of each.
 * 2. Planner snapshot from the watched cache: `builds` ready builds with `uploads` uploads
 *    spread over 10 providers, written by one handle; a second handle opens (cold: it reads
 *    the tree once) and then runs `passes` of listBuilds + listUploads. Printed: time per pass
 *    (goal < 100 ms once warm) and ZooKeeper reads per pass (goal 0 while nothing changed),
 *    then the same for a pass right after another handle changed one upload.
 *
 * ZooKeeper is Debian's 3.8 on 127.0.0.1 (test/support/zookeeper.ts), forceSync=no unless
 * `--zk-fsync`; SQLite is a WAL file in a temp dir (synchronous=NORMAL).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SqliteStore } from '../lib/store/sqlite/sqlite-store.js';
import type { Store } from '../lib/store/store.js';
import { ZooKeeperStore } from '../lib/store/zookeeper/zookeeper-store.js';
import { startZooKeeper } from '../test/support/zookeeper.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const FSYNC = process.argv.includes('--zk-fsync');
const CREATES = Number(args[0] ?? 1000);
const BUILDS = Number(args[1] ?? 200);
const UPLOADS = Number(args[2] ?? 4000);
const PASSES = Number(args[3] ?? 20);
const PROVIDERS = 10;

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? Number.NaN;

async function writeRate(store: Store): Promise<{ builds: number; nodes: number }> {
  // Warm-up (both JITs, ZooKeeper's too): the first few hundred writes run at half speed.
  for (let i = 0; i < 300; i++) {
    await store.createBuild({ diskimage: 'warm-up', formats: ['qcow2'] });
    await store.createNode({ state: 'building', provider: 'warm-up', pool: 'main', labels: ['small'] });
  }
  let t0 = performance.now();
  for (let i = 0; i < CREATES; i++) await store.createBuild({ diskimage: 'rate', formats: ['qcow2'] });
  const builds = CREATES / ((performance.now() - t0) / 1000);
  t0 = performance.now();
  for (let i = 0; i < CREATES; i++) await store.createNode({ state: 'building', provider: 'cloud-0', pool: 'main', labels: ['small'] });
  const nodes = CREATES / ((performance.now() - t0) / 1000);
  return { builds, nodes };
}

async function populate(store: Store): Promise<void> {
  const perBuild = Math.max(1, Math.round(UPLOADS / BUILDS));
  for (let b = 0; b < BUILDS; b++) {
    const build = await store.createBuild({ diskimage: `image-${b % 20}`, formats: ['qcow2'] });
    await store.updateBuild(build.id, { state: 'ready', builderHostname: 'builder-1', files: [{ format: 'qcow2', size: 1 << 30, sha256: '0'.repeat(64) }] });
    for (let u = 0; u < perBuild; u++) {
      const up = await store.createUpload({ buildId: build.id, provider: `cloud-${u % PROVIDERS}`, imageName: build.diskimage, externalName: null });
      await store.updateUpload(up.id, { state: 'ready', externalId: `ext-${up.id}`, format: 'qcow2' });
    }
  }
}

async function passes(store: Store, reads: () => number): Promise<{ p50: number; max: number; readsPerPass: number }> {
  const times: number[] = [];
  const r0 = reads();
  for (let i = 0; i < PASSES; i++) {
    const t0 = performance.now();
    const [builds, uploads] = [await store.listBuilds(), await store.listUploads()];
    times.push(performance.now() - t0);
    if (builds.length !== BUILDS || uploads.length < UPLOADS) throw new Error(`snapshot has ${builds.length} builds and ${uploads.length} uploads`);
  }
  return { p50: pct(times, 0.5), max: Math.max(...times), readsPerPass: (reads() - r0) / PASSES };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'zk-store-bench-'));
  const zk = await startZooKeeper({ forceSync: FSYNC });
  const servers = [{ host: zk.host, port: zk.port, chroot: '/bench' }];
  try {
    console.log(`ZooKeeper 3.8 on 127.0.0.1 (forceSync=${FSYNC ? 'yes' : 'no'}), SQLite WAL synchronous=NORMAL; node ${process.version}, ${os.cpus().length} cores`);
    const sqlite = await SqliteStore.open(path.join(dir, 'rate.db'));
    const sqliteRate = await writeRate(sqlite);
    await sqlite.close();
    const zkRateStore = await ZooKeeperStore.open({ servers: [{ ...servers[0] as { host: string; port: number }, chroot: '/rate' }] });
    const zkRate = await writeRate(zkRateStore);
    await zkRateStore.close();
    console.log(`\n${CREATES} sequential creates   | SQLite ops/s | ZooKeeper ops/s | ZooKeeper / SQLite`);
    console.log(`createBuild                | ${sqliteRate.builds.toFixed(0).padStart(12)} | ${zkRate.builds.toFixed(0).padStart(15)} | ${(zkRate.builds / sqliteRate.builds).toFixed(2)}`);
    console.log(`createNode                 | ${sqliteRate.nodes.toFixed(0).padStart(12)} | ${zkRate.nodes.toFixed(0).padStart(15)} | ${(zkRate.nodes / sqliteRate.nodes).toFixed(2)}`);

    const writer = await ZooKeeperStore.open({ servers });
    let t0 = performance.now();
    await populate(writer);
    const populateS = (performance.now() - t0) / 1000;
    t0 = performance.now();
    const reader = await ZooKeeperStore.open({ servers });
    const coldMs = performance.now() - t0;
    const coldReads = reader.readCount();
    const warm = await passes(reader, () => reader.readCount());
    // One change by another handle: the next pass waits for that one re-read, nothing more.
    const someUpload = (await writer.listUploads())[0];
    if (!someUpload) throw new Error('no uploads');
    const r0 = reader.readCount();
    await writer.updateUpload(someUpload.id, { state: 'deleting' });
    const tc = performance.now();
    let seen = false;
    // Between passes the event loop runs (the watch event is I/O), as between planner ticks.
    for (let i = 0; i < 2000 && !seen; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      seen = (await reader.listUploads({ states: ['deleting'] })).length === 1;
    }
    if (!seen) throw new Error('the reader never saw the change');
    const changedMs = performance.now() - tc;
    const changedReads = reader.readCount() - r0;
    const sq = await SqliteStore.open(path.join(dir, 'snapshot.db'));
    await populate(sq);
    const sqWarm = await passes(sq, () => 0);
    await sq.close();
    await reader.close();
    await writer.close();

    console.log(`\nplanner snapshot (listBuilds + listUploads), ${BUILDS} builds, ${UPLOADS} uploads on ${PROVIDERS} providers`);
    console.log(`  written by one handle in ${populateS.toFixed(1)} s (${((BUILDS + UPLOADS) * 2 / populateS).toFixed(0)} writes/s)`);
    console.log(`  ZooKeeper, cold open of a second handle: ${coldMs.toFixed(0)} ms, ${coldReads} reads`);
    console.log(`  ZooKeeper, warm pass: p50 ${warm.p50.toFixed(1)} ms, max ${warm.max.toFixed(1)} ms, ${warm.readsPerPass} reads per pass over ${PASSES} passes (goal < 100 ms, 0 reads)`);
    console.log(`  ZooKeeper, after another handle changed one upload: seen in ${changedMs.toFixed(1)} ms with ${changedReads} read(s)`);
    console.log(`  SQLite, same pass: p50 ${sqWarm.p50.toFixed(1)} ms, max ${sqWarm.max.toFixed(1)} ms`);
  } finally {
    await zk.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
