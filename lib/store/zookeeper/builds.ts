/**
 * Builds in ZooKeeper: `/nodepool/images/<diskimage>/builds/<10-digit seq>`, the id shown being
 * `<diskimage>-<seq>`. The seq comes from the counter `sequences/build-<diskimage>` (see
 * sequences.ts); the build requests a new build serves go in the same transaction, and so does
 * its contender in Nodepool's build lock (build-lock.ts). Builds Nodepool 11 wrote sit at
 * `builds/<uuid4 hex>` and read as `<diskimage>-<hex>`; the counter never looks at them.
 */
import { imageFieldsOf } from '../image-fields.js';
import { StateConflictError, StoreError } from '../../errors.js';
import { formatImageId, IMAGE_ID_RE } from '../../images/image-file.js';
import { LOG_TOKEN_RE } from '../../http/build-log-protocol.js';
import type { CorruptLog, CorruptRecord } from '../corrupt.js';
import { NODEPOOL_BUILD_STATE, type BuildPatch, type BuildRecord, type BuildState, type NewBuild } from '../models.js';
import { checkBuildState, checkLogToken, checkLogUrl } from '../checks.js';
import type { ExpectState, BuildFilter } from '../store.js';
import { corruptEntry, memoized } from './checked.js';
import { buildLockDir, contenderOp, removeContenders } from './build-lock.js';
import { ensure, removeTree, updateJson, type ZkContext } from './context.js';
import { SEQ_RE } from './layout.js';
import { copyBuild, buildFromJson, buildJson, holdsOwnState, LIFECYCLE_STATE } from './image-records.js';
import { decode, decodeRecord, encode, statTime, toMs, type Json } from './records.js';
import type { Entry } from './tree-cache.js';
import type { Op } from './zk-library.js';

/** `<diskimage>-<seq>` → its parts; undefined for anything else. */
export function splitBuildId(id: string): { diskimage: string; seq: string } | undefined {
  const m = IMAGE_ID_RE.exec(id);
  if (!m || id.includes('..')) return undefined;
  return { diskimage: m[1] as string, seq: m[2] as string };
}

/** Builds of one store handle. */
export class ZkBuilds {
  constructor(private readonly ctx: ZkContext) {}

  async create(input: NewBuild): Promise<BuildRecord> {
    const { layout, clock } = this.ctx;
    const client = this.ctx.main();
    formatImageId(input.diskimage, 1);
    const what = `creating a build of ${input.diskimage}`;
    const token = checkLogToken(input.logToken, what);
    const builds = layout.builds(input.diskimage);
    if (!this.ctx.cache.get(builds)) {
      await ensure(client, layout.image(input.diskimage));
      await ensure(client, builds);
    }
    // Made with `builds` (before any build of it), as kazoo makes it: Nodepool compares their ctimes.
    await ensure(client, buildLockDir(builds));
    await this.sweepContenders(input.diskimage);
    const skip = new Set(input.skipIds ?? []);
    let made: BuildRecord | undefined;
    const value = await this.ctx.sequences.next(`build-${input.diskimage}`, what, async (next) => {
      // Builds written without our counter (Nodepool's own, an import) are never taken again.
      let v = Math.max(next, maxSeq(this.ctx.cache.children(builds)) + 1);
      while (skip.has(formatImageId(input.diskimage, v))) v += 1;
      const now = clock();
      const id = formatImageId(input.diskimage, v);
      made = {
        id, diskimage: input.diskimage, state: 'building', stateTime: now, created: now, builderHostname: null, builderId: null,
        formats: [...input.formats], files: [], reason: null, progress: null, ...imageFieldsOf(input),
      };
      const ops: Op[] = [
        { op: 'create', path: `${builds}/${id.slice(-10)}`, data: encode(withLogToken(buildJson(made), token), `build ${id}`) },
        contenderOp(builds, id),
      ];
      if (input.servesRequestsUpTo !== undefined) {
        const req = await client.getData(layout.requestBuild(input.diskimage));
        if (req && requestedAtOf(req.data, req.stat.ctime) <= input.servesRequestsUpTo) {
          ops.push({ op: 'remove', path: layout.requestBuild(input.diskimage), version: req.stat.version });
        }
      }
      return { value: v, ops };
    });
    if (!made || made.id !== formatImageId(input.diskimage, value)) throw new StoreError(`${what}: lost track of the id taken`);
    return made;
  }

  async get(id: string): Promise<BuildRecord | undefined> {
    const parts = splitBuildId(id);
    if (!parts) return undefined;
    const got = await this.ctx.main().getData(this.ctx.layout.build(parts.diskimage, parts.seq));
    if (!got || got.data.length === 0) return undefined;
    return buildFromJson(id, parts.diskimage, decodeRecord(got.data, 'build', id));
  }

  /** The build's `log_token`, read from ZooKeeper; undefined without one (or without the build). */
  async logToken(id: string): Promise<string | undefined> {
    const parts = splitBuildId(id);
    if (!parts) return undefined;
    const got = await this.ctx.main().getData(this.ctx.layout.build(parts.diskimage, parts.seq));
    if (!got || got.data.length === 0) return undefined;
    const v = decodeRecord(got.data, 'build', id)[LOG_TOKEN];
    return typeof v === 'string' && LOG_TOKEN_RE.test(v) ? v : undefined;
  }

  /** From the cache: builds by diskimage, then id. */
  async list(filter: BuildFilter = {}): Promise<BuildRecord[]> {
    await this.ctx.fresh();
    if (filter.states?.length === 0) return [];
    const out: BuildRecord[] = [];
    for (const { id, diskimage, entry } of this.cached(filter.diskimage)) {
      const rec = memoBuild(entry, id, diskimage, this.ctx.corrupt);
      if (!rec || (filter.states && !filter.states.includes(rec.state))) continue;
      out.push(copyBuild(rec));
    }
    return out;
  }

  /** From the cache: the corrupt builds (of one diskimage, or all), by diskimage then id. */
  corrupt(diskimage?: string): CorruptRecord[] {
    const out: CorruptRecord[] = [];
    for (const { id, diskimage: d, entry } of this.cached(diskimage)) {
      memoBuild(entry, id, d, this.ctx.corrupt);
      const c = corruptEntry(entry);
      if (c) out.push(c);
    }
    return out;
  }

  /** Cached build entries (of one diskimage, or all), by diskimage then seq. */
  *cached(diskimage?: string): Generator<{ id: string; diskimage: string; seq: string; path: string; entry: Entry }> {
    const { layout, cache } = this.ctx;
    const images = diskimage === undefined ? cache.children(layout.images) : [diskimage];
    for (const d of images) {
      let builds: string;
      try {
        builds = layout.builds(d);
      } catch {
        continue;
      }
      for (const seq of cache.children(builds)) {
        const path = `${builds}/${seq}`;
        const entry = cache.get(path);
        if (entry) yield { id: `${d}-${seq}`, diskimage: d, seq, path, entry };
      }
    }
  }

  async update(id: string, patch: BuildPatch, opts: ExpectState<BuildState> = {}): Promise<BuildRecord | undefined> {
    const parts = splitBuildId(id);
    if (!parts) return undefined;
    if (patch.state !== undefined) checkBuildState(patch.state, `updating build ${id}`);
    const now = this.ctx.clock();
    let wasBuilding = false;
    const done = await updateJson(this.ctx.main(), this.ctx.layout.build(parts.diskimage, parts.seq), `build ${id}`, (cur) => {
      const rec = buildFromJson(id, parts.diskimage, cur);
      wasBuilding = rec.state === 'building';
      const expect = opts.expectStates;
      if (expect && !expect.includes(rec.state)) {
        throw new StateConflictError(id, rec.state, `build ${id} is ${rec.state}, expected ${expect.join(' or ') || 'no state at all'}`);
      }
      const next = applyBuildPatch(rec, patch, now);
      return mergeJson(cur, buildJson(next), ['builder', 'builder_id', 'formats', 'log_url', LIFECYCLE_STATE]);
    });
    if (done && wasBuilding && done.json.state !== 'building') await removeContenders(this.ctx.main(), this.ctx.layout.builds(parts.diskimage), (b) => b === id);
    return done ? buildFromJson(id, parts.diskimage, done.json) : undefined;
  }

  /**
   * Rewrites the builds this program stored before issue 31 with `lost` in Nodepool's `state`
   * field (Nodepool 11's readers raise on it): `ready` there, `lost` beside it. Each is a
   * conditional update (one moved on meanwhile is left to its writer). Returns how many.
   */
  async restateOwn(): Promise<number> {
    await this.ctx.fresh();
    let done = 0;
    for (const { id, diskimage, entry } of [...this.cached()]) {
      const rec = memoBuild(entry, id, diskimage, this.ctx.corrupt);
      if (!rec || !holdsOwnState(entry.data, NODEPOOL_BUILD_STATE)) continue;
      try {
        if (await this.update(id, {}, { expectStates: [rec.state] })) done += 1;
      } catch (err) {
        if (!(err instanceof StateConflictError)) throw err;
      }
    }
    return done;
  }

  /** Removes contenders of builds of `diskimage` that are no longer building (left by a lost connection). */
  private async sweepContenders(diskimage: string): Promise<void> {
    await this.ctx.fresh();
    const building = new Set<string>();
    for (const { id, diskimage: d, entry } of this.cached(diskimage)) {
      if (memoBuild(entry, id, d, this.ctx.corrupt)?.state === 'building') building.add(id);
    }
    await removeContenders(this.ctx.main(), this.ctx.layout.builds(diskimage), (b) => splitBuildId(b)?.diskimage === diskimage && !building.has(b));
  }

  async delete(id: string): Promise<boolean> {
    const parts = splitBuildId(id);
    if (!parts) return false;
    const client = this.ctx.main();
    const path = this.ctx.layout.build(parts.diskimage, parts.seq);
    await removeContenders(client, this.ctx.layout.builds(parts.diskimage), (b) => b === id);
    return removeTree(client, path, `deleting build ${id}`, async (ops) => {
      const uploads = ops.map((o) => o.path).filter((p) => p.includes('/providers/') && SEQ_RE.test(p.slice(p.lastIndexOf('/') + 1)));
      if (uploads.length > 0) {
        const shown = uploads.slice(0, 5).map((p) => p.slice(p.lastIndexOf('/') + 1)).join(', ') + (uploads.length > 5 ? ', …' : '');
        throw new StoreError(`cannot delete build ${id}: ${uploads.length} upload record(s) of it remain (${shown}); delete the uploads first`);
      }
      // An upload created meanwhile makes its `images` dir non-empty: the transaction fails and the tree is read again.
      return ops;
    });
  }
}

/** The highest 10-digit sequence among `names` (0 when none). */
export function maxSeq(names: Iterable<string>): number {
  let max = 0;
  for (const n of names) if (SEQ_RE.test(n)) max = Math.max(max, Number(n));
  return max;
}

/**
 * Our field beside Nodepool's (issue 31 §9): the build's log token, written once with the record
 * and kept by every later write (mergeJson keeps fields the record's JSON does not name), never
 * read into a BuildRecord. Nodepool 11 ignores it.
 */
const LOG_TOKEN = 'log_token';

function withLogToken(j: Json, token: string | null): Json {
  return token === null ? j : { ...j, [LOG_TOKEN]: token };
}

/** The record of a cached build entry, parsed once per data version; undefined when corrupt. */
export function memoBuild(entry: Entry, id: string, diskimage: string, log: CorruptLog): BuildRecord | undefined {
  const data = entry.data;
  if (!data || data.length === 0) return undefined;
  return memoized(entry, log, () => buildFromJson(id, diskimage, decodeRecord(data, 'build', id)), { diskimage });
}

/** When a build request was made: our `requested`, or the znode's creation for Nodepool's empty marker. */
export function requestedAt(j: Json, ctime: Buffer): number {
  return typeof j.requested === 'number' ? toMs(j.requested) : Number(ctime.readBigInt64BE(0));
}

function applyBuildPatch(rec: BuildRecord, patch: BuildPatch, now: number): BuildRecord {
  const next = { ...rec };
  if (patch.state !== undefined && patch.state !== rec.state) {
    next.state = patch.state;
    next.stateTime = now;
  }
  if (patch.builderHostname !== undefined) next.builderHostname = patch.builderHostname;
  if (patch.builderId !== undefined) next.builderId = patch.builderId;
  if (patch.formats !== undefined) next.formats = [...patch.formats];
  if (patch.files !== undefined) next.files = structuredClone(patch.files);
  if (patch.reason !== undefined) next.reason = patch.reason;
  if (patch.progress !== undefined) next.progress = patch.progress === null ? null : { ...patch.progress };
  if (patch.logUrl !== undefined) {
    const url = checkLogUrl(patch.logUrl, `updating build ${rec.id}`);
    if (url === null) delete next.logUrl;
    else next.logUrl = url;
  }
  return next;
}

/**
 * The new JSON: what we know, over whatever else the znode held (fields another writer such as
 * Nodepool added survive), with our fields that became absent (formats, builder, a state of
 * ours in `lifecycle_state`) removed.
 */
export function mergeJson(cur: Json, ours: Json, owned: readonly string[] = ['builder', 'builder_id', 'formats']): Json {
  const next: Json = { ...cur, ...ours };
  for (const k of owned) if (!(k in ours)) delete next[k];
  return next;
}

/** When a build request was made, from its raw data; a corrupt one counts as made at its creation. */
export function requestedAtOf(data: Buffer, ctime: Buffer): number {
  try {
    return requestedAt(decode(data, 'build request'), ctime);
  } catch {
    return statTime(ctime);
  }
}
