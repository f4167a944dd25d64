/**
 * Image data export and import for the ZooKeeper store (see lib/store/image-data.ts).
 *
 * Export: one consistent view of the image records and the counters. The records come from the
 * watched cache: after a sync (one round trip, so every notification of an earlier write has
 * arrived and its re-read finished) the image part of the cache is fingerprinted (the identity
 * of every entry, its data and its children: a re-read replaces them), the records and the
 * counters are read, then a second sync; if no image entry was re-read or removed in between,
 * every record equals its state at the second sync, and the counters (bumped only in the same
 * transaction as a record create) agree with them. Otherwise it starts again (bounded).
 *
 * Import: ZooKeeper caps one multi() at jute.maxbuffer (1 MB by default), so a large import is
 * several transactions and cannot be atomic. It gets as close as ZooKeeper allows:
 *  1. validate (parseImageData) and check conflicts against a synced cache (findImportConflict,
 *     the wording SQLite uses); nothing is written when that fails;
 *  2. raise the counters first, in one multi(), version-checked: from then on no writer that
 *     uses them (any process of this store) can take an imported id;
 *  3. check conflicts again (a build created between 1 and 2 would otherwise slip through);
 *  4. write the records with plain creates (they fail on any existing node) in multi()s of at
 *     most {@link MAX_BATCH_BYTES} bytes and {@link MAX_BATCH_OPS} operations, parents first;
 *  5. on any failure, remove what the committed batches (and a batch whose outcome a lost
 *     connection left unknown) created, newest first, and put each counter back unless another
 *     writer moved it since; then rethrow. Readers may see a partial import while it runs, and
 *     a rollback that itself fails (ZooKeeper gone) leaves records behind: the error says so.
 */
import { coerceError, StoreError, ZooKeeperError } from '../../errors.js';
import {
  buildIdSequence, findImportConflict, IMAGE_DATA_FORMAT, IMAGE_DATA_VERSION, rolloutCounts, uploadIdSequence,
  uploadRetryCounts, withoutOrphanUploads, withRollout, withUploadRetries, type ImageData, type ImportCounts, type ImportTarget,
} from '../image-data.js';
import { parseImageData } from '../image-data-check.js';
import type { BuildRecord, BuildRequest, PauseRecord, PinRecord, RevocationRecord, UploadRecord, UploadRetryRequest } from '../models.js';
import { buildLockDir } from './build-lock.js';
import { maxSeq, splitBuildId } from './builds.js';
import { ensure, type ZkContext } from './context.js';
import { uploadIdOf } from '../../images/image-file.js';
import { batches as cutBatches, MAX_BATCH_BYTES, MAX_BATCH_OPS, recordOps } from './image-data-ops.js';
import { decode, encode } from './records.js';
import type { Op } from './zk-library.js';

export { MAX_BATCH_BYTES, MAX_BATCH_OPS };
/** Attempts at a consistent export, or at raising the counters, while other writers keep going. */
const MAX_ATTEMPTS = 20;

const BUILD_COUNTER_PREFIX = 'build-';
const UPLOAD_COUNTER = 'upload';

/** The store's list calls the export reads through (the same order as Store's lists). */
export interface ImageLists {
  builds(): Promise<BuildRecord[]>;
  uploads(): Promise<UploadRecord[]>;
  pauses(): Promise<PauseRecord[]>;
  buildRequests(): Promise<BuildRequest[]>;
  pins(): Promise<PinRecord[]>;
  revocations(): Promise<RevocationRecord[]>;
  uploadRetries(): Promise<UploadRetryRequest[]>;
}

/** Test seams of {@link ZkImageData}. */
export interface ZkImageDataOptions {
  maxBatchBytes?: number;
  /** Called before batch `index` (0-based) of the records is written; a throw fails the import there. */
  beforeBatch?: (index: number, ops: readonly Op[]) => Promise<void> | void;
}

interface CounterState {
  name: string;
  path: string;
  /** undefined: no counter znode. */
  version: number | undefined;
  data: Buffer | undefined;
  value: number;
  recent: unknown[];
}

const lost = (err: unknown): boolean => err instanceof ZooKeeperError && (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT');

/** Image data of one ZooKeeper store handle. */
export class ZkImageData {
  constructor(private readonly ctx: ZkContext, private readonly lists: ImageLists, private readonly opts: ZkImageDataOptions = {}) {}

  /** Every image record and the build and upload sequences, as of one moment (see the file comment). */
  async export(): Promise<ImageData> {
    const { cache } = this.ctx;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      await cache.sync();
      const before = this.fingerprint();
      // Corrupt records are left out (the CLI names them), with the uploads of a corrupt build; a corrupt pause is kept as a pause.
      const builds = await this.lists.builds();
      const [uploads, pauses, buildRequests] = [withoutOrphanUploads(builds, await this.lists.uploads()), await this.lists.pauses(), await this.lists.buildRequests()];
      // A corrupt pin is left out (which build it pins cannot be told); a corrupt revocation still revokes.
      const [pins, revocations] = [await this.lists.pins(), await this.lists.revocations()];
      const retries = await this.lists.uploadRetries();
      const counters = await this.readCounters();
      await cache.sync();
      if (!sameRefs(before, this.fingerprint())) continue;
      const build: Record<string, number> = {};
      let upload = 0;
      for (const c of counters) {
        if (c.name === UPLOAD_COUNTER) upload = c.value;
        else build[c.name.slice(BUILD_COUNTER_PREFIX.length)] = c.value;
      }
      // Records written without the counters (Nodepool's own builder) still count: no id is handed out twice.
      for (const b of builds) build[b.diskimage] = Math.max(build[b.diskimage] ?? 0, buildIdSequence(b.id));
      for (const u of uploads) upload = Math.max(upload, uploadIdSequence(u.id));
      return withUploadRetries(withRollout({
        format: IMAGE_DATA_FORMAT, version: IMAGE_DATA_VERSION, exported: this.ctx.clock(),
        builds, uploads, pauses, buildRequests, sequences: { build: sortKeys(build), upload },
      } as ImageData, pins, revocations), retries);
    }
    throw new StoreError(`exporting image data: the image records kept changing over ${MAX_ATTEMPTS} attempts at a consistent read; try again when the builders are quieter`);
  }

  /**
   * Validates `data` and writes it (see the file comment for how far that is all or nothing).
   * Thrown: InvalidImageDataError, ImageDataConflictError (nothing written); StoreError or
   * ZooKeeperError when a write failed (what was written is removed again, or the message
   * lists what could not be).
   */
  async import(input: ImageData): Promise<ImportCounts> {
    const data = parseImageData(input);
    const { layout, cache } = this.ctx;
    const client = this.ctx.main();
    await cache.sync();
    const first = findImportConflict(data, this.target());
    if (first) throw first;

    // Pauses, build requests, pins and revocations the target has are kept; the rest are created.
    const counts: ImportCounts = { builds: 0, uploads: 0, pauses: 0, buildRequests: 0, pausesKept: 0, buildRequestsKept: 0, sequencesRaised: 0 };
    // One of ours is there also when an older version's place still holds it (not yet moved, intent-move.ts).
    const has = (path: string): boolean => {
      const legacy = layout.legacyOf(path);
      return cache.get(path) !== undefined || (legacy !== undefined && cache.get(legacy) !== undefined);
    };
    const pauses = data.pauses.filter((p) => {
      const there = has(p.provider === null ? layout.pause(p.diskimage) : layout.providerPause(p.diskimage, p.provider));
      if (there) counts.pausesKept++;
      return !there;
    });
    const requests = data.buildRequests.filter((r) => {
      const there = cache.get(layout.requestBuild(r.diskimage)) !== undefined;
      if (there) counts.buildRequestsKept++;
      return !there;
    });
    const pins = (data.pins ?? []).filter((p) => !has(p.provider === null ? layout.pin(p.diskimage) : layout.providerPin(p.diskimage, p.provider)));
    const revocations = (data.revocations ?? []).filter((r) => !has(layout.revocation(r.diskimage, r.buildId)));
    const retries = (data.uploadRetries ?? []).filter((r) => !has(layout.uploadRetry(r.diskimage, r.provider)));

    // 2. Counters first.
    const raised = await this.raiseCounters(data);
    counts.sequencesRaised = raised.length;
    const created: string[][] = [];
    try {
      // 3. Again, now that no counter user can take an imported id.
      await cache.sync();
      const second = findImportConflict(data, this.target());
      if (second) throw second;
      // Directories that outlive an import (as createBuild and setPause leave them).
      const images = new Set([...data.builds, ...pauses.filter((p) => p.provider === null), ...requests].map((r) => r.diskimage));
      for (const d of [...images].sort()) {
        if (!cache.get(layout.image(d))) await ensure(client, layout.image(d));
        if (data.builds.some((b) => b.diskimage === d)) {
          if (!cache.get(layout.builds(d))) await ensure(client, layout.builds(d));
          // Before the builds, as createBuild leaves it (Nodepool compares their ctimes; build-lock.ts).
          await ensure(client, buildLockDir(layout.builds(d)));
        }
      }
      // This project's own, under image-intents (layout.ts): their directories, level by level.
      const own = [
        ...pauses.flatMap((p) => (p.provider === null ? [] : [layout.providerPause(p.diskimage, p.provider)])),
        ...pins.map((p) => (p.provider === null ? layout.pin(p.diskimage) : layout.providerPin(p.diskimage, p.provider))),
        ...revocations.map((r) => layout.revocation(r.diskimage, r.buildId)),
        ...retries.map((r) => layout.uploadRetry(r.diskimage, r.provider)),
      ];
      for (const dir of new Set(own.flatMap((path) => layout.intentParents(path)))) if (!cache.get(dir)) await ensure(client, dir);
      // 4. The records, in bounded transactions.
      const batches = cutBatches(recordOps(layout, { data, pauses, requests, pins, revocations, retries }), this.opts.maxBatchBytes ?? MAX_BATCH_BYTES);
      for (const [i, ops] of batches.entries()) {
        await this.opts.beforeBatch?.(i, ops);
        try {
          await client.multi(ops, `importing image data (transaction ${i + 1} of ${batches.length})`);
        } catch (err) {
          // A lost connection leaves open whether it applied: roll it back too (its paths are ours).
          if (lost(err)) created.push(ops.map((o) => o.path));
          throw err;
        }
        created.push(ops.map((o) => o.path));
      }
    } catch (err) {
      // 5. Roll back.
      const left = await this.rollback(created, raised);
      if (left.length === 0) throw err;
      const shown = left.slice(0, 10).join(', ') + (left.length > 10 ? `, … (${left.length} in all)` : '');
      throw new StoreError(`importing image data: ${coerceError(err).message}; removing what the import had written failed too, `
        + `these remain: ${shown}`, { cause: err });
    }
    counts.builds = data.builds.length;
    counts.uploads = data.uploads.length;
    counts.pauses = pauses.length;
    counts.buildRequests = requests.length;
    Object.assign(counts, rolloutCounts(data, pins.length, revocations.length), uploadRetryCounts(data, retries.length));
    this.ctx.wroteElsewhere(); // the next list syncs first: it shows the import whole
    return counts;
  }

  /** The conflict check's view of the (synced) cache: every build and upload znode, empty ones too. */
  private target(): ImportTarget {
    const { layout, cache } = this.ctx;
    const uploads = new Set<string>();
    for (const d of cache.children(layout.images)) {
      const builds = `${layout.images}/${d}/builds`;
      for (const seq of cache.children(builds)) {
        const providers = `${builds}/${seq}/providers`;
        for (const p of cache.children(providers)) for (const name of cache.children(`${providers}/${p}/images`)) uploads.add(uploadIdOf(seq, p, name));
      }
    }
    return {
      hasBuild: (id) => {
        const parts = splitBuildId(id);
        return parts !== undefined && cache.get(layout.build(parts.diskimage, parts.seq)) !== undefined;
      },
      hasUpload: (id) => uploads.has(id),
      maxBuildSequence: (diskimage) => maxSeq(cache.children(layout.builds(diskimage))),
      maxUploadSequence: () => maxSeq(uploads),
    };
  }

  /** Identity of every cached entry under images and image-intents (a watch's re-read or a removal changes it). */
  private fingerprint(): unknown[] {
    const { cache, layout } = this.ctx;
    const out: unknown[] = [];
    const walk = (path: string, depth: number): void => {
      const e = cache.get(path);
      out.push(path, e, e?.data, e?.children);
      if (depth < 8) for (const c of cache.children(path)) walk(`${path}/${c}`, depth + 1);
    };
    walk(layout.images, 0);
    walk(layout.imageIntents, 0);
    return out;
  }

  /** The build and upload counters (not the node counter), by name. */
  private async readCounters(): Promise<CounterState[]> {
    const { layout } = this.ctx;
    const client = this.ctx.main();
    const names = (await client.getChildren(layout.sequences) ?? [])
      .filter((n) => n === UPLOAD_COUNTER || n.startsWith(BUILD_COUNTER_PREFIX)).sort();
    const out: CounterState[] = [];
    for (const name of names) {
      const c = await this.readCounter(name);
      if (c.version !== undefined) out.push(c);
    }
    return out;
  }

  private async readCounter(name: string): Promise<CounterState> {
    const path = this.ctx.layout.sequence(name);
    const got = await this.ctx.main().getData(path);
    if (!got) return { name, path, version: undefined, data: undefined, value: 0, recent: [] };
    const j = decode(got.data, `sequence ${name}`);
    const value = typeof j.value === 'number' && Number.isSafeInteger(j.value) && j.value >= 0 ? j.value : undefined;
    if (value === undefined) throw new StoreError(`counter ${path} holds no sequence value`);
    return { name, path, version: got.stat.version, data: got.data, value, recent: Array.isArray(j.recent) ? j.recent : [] };
  }

  /**
   * Moves every counter behind its imported value up to it, in one version-checked multi()
   * (read again and retried when another writer moved one meanwhile). Returns what it changed,
   * with the version it left, for the rollback.
   */
  private async raiseCounters(data: ImageData): Promise<Array<{ before: CounterState; version: number }>> {
    const wanted: Array<[string, number]> = [
      ...Object.entries(data.sequences.build).map(([d, n]): [string, number] => [`${BUILD_COUNTER_PREFIX}${d}`, n]),
      [UPLOAD_COUNTER, data.sequences.upload],
    ];
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const ops: Op[] = [];
      const changed: Array<{ before: CounterState; version: number }> = [];
      for (const [name, value] of wanted) {
        const c = await this.readCounter(name);
        if (c.value >= value) continue;
        const next = encode({ value, recent: c.recent }, `sequence ${name}`);
        if (c.version === undefined) ops.push({ op: 'create', path: c.path, data: next });
        else ops.push({ op: 'set', path: c.path, data: next, version: c.version });
        changed.push({ before: c, version: (c.version ?? -1) + 1 });
      }
      if (ops.length === 0) return [];
      try {
        await this.ctx.main().multi(ops, 'importing image data (raising the id sequences)');
        return changed;
      } catch (err) {
        if (err instanceof ZooKeeperError && (err.code === 'BAD_VERSION' || err.code === 'NODE_EXISTS')) continue;
        if (!lost(err)) throw err;
        // Applied or not: the counters tell (each one holds the value or is past it).
        const after = await Promise.all(changed.map((c) => this.readCounter(c.before.name)));
        if (after.every((a, i) => a.version === changed[i]?.version && a.value >= (wanted.find((w) => w[0] === a.name)?.[1] ?? 0))) return changed;
      }
    }
    throw new StoreError(`importing image data: the id sequences kept moving over ${MAX_ATTEMPTS} attempts`);
  }

  /**
   * Removes the paths of `created` (newest batch first, children before parents) and puts the
   * counters back where no other writer moved them since. Returns the paths it could not remove.
   */
  private async rollback(created: string[][], raised: Array<{ before: CounterState; version: number }>): Promise<string[]> {
    const client = this.ctx.main();
    const paths = created.flat().reverse();
    const left: string[] = [];
    for (let i = 0; i < paths.length; i += MAX_BATCH_OPS) {
      const chunk = paths.slice(i, i + MAX_BATCH_OPS);
      try {
        await client.multi(chunk.map((path) => ({ op: 'remove', path, version: -1 })), 'rolling back an image data import');
        continue;
      } catch {
        // one by one: a node already gone, or one someone added a child to, must not keep the rest
      }
      for (const path of chunk) {
        try {
          await client.remove(path);
        } catch (err) {
          if (err instanceof ZooKeeperError && err.code === 'NO_NODE') continue;
          left.push(path);
        }
      }
    }
    for (const { before, version } of raised) {
      try {
        if (before.version === undefined) await client.remove(before.path, version);
        else await client.setData(before.path, before.data ?? Buffer.alloc(0), version);
      } catch {
        // moved by another writer since (it took an id past ours: the counter must stay), or unreachable: a gap in the ids, never a reuse
      }
    }
    this.ctx.wroteElsewhere();
    return left;
  }
}

function sameRefs(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function sortKeys(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
