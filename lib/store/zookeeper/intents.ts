/**
 * Operator intents and published status in ZooKeeper: Nodepool's
 * `/nodepool/images/<diskimage>/request-build` and `…/pause` (with JSON where Nodepool writes
 * an empty marker; an empty one is read as made at its creation), this project's per-provider
 * pauses under `…/provider-pauses/<provider>`, and status values under `/nodepool/status/`.
 */
import { CorruptRecordError, StoreError, ZooKeeperError } from '../../errors.js';
import { Fields, type CorruptRecord } from '../corrupt.js';
import type { BuildRequest, PauseRecord } from '../models.js';
import { requestedAtOf } from './builds.js';
import { corruptEntry, memoized } from './checked.js';
import { ensure, updateJson, type ZkContext } from './context.js';
import { pauseFromJson, pauseId, pauseJson } from './image-records.js';
import { decode, decodeRecord, encode, statTime, toMs, toSeconds, type Json } from './records.js';
import type { Entry } from './tree-cache.js';

/** A build request's record. Thrown: CorruptRecordError when `requested` is not a time. */
export function buildRequestFromJson(diskimage: string, j: Json, ctime: Buffer): BuildRequest {
  const f: Fields = new Fields(j, 'build-request', diskimage);
  return { diskimage, requested: f.optSeconds('requested') ?? statTime(ctime) };
}

/** Intents of one store handle. */
export class ZkIntents {
  constructor(private readonly ctx: ZkContext) {}

  async requestBuild(diskimage: string): Promise<BuildRequest> {
    const path = this.ctx.layout.requestBuild(diskimage);
    const requested = this.ctx.clock();
    await this.upsert(path, encode({ requested: toSeconds(requested) }, `build request of ${diskimage}`), this.ctx.layout.image(diskimage));
    return { diskimage, requested };
  }

  /** From the cache, by diskimage. */
  async listBuildRequests(): Promise<BuildRequest[]> {
    await this.ctx.fresh();
    const { layout, cache } = this.ctx;
    const out: BuildRequest[] = [];
    for (const d of cache.children(layout.images)) {
      const e = cache.get(`${layout.images}/${d}/request-build`);
      const rec = e && this.memoRequest(d, e);
      if (rec) out.push({ ...rec });
    }
    return out;
  }

  private memoRequest(diskimage: string, e: Entry): BuildRequest | undefined {
    const { data, stat } = e;
    if (!data || !stat) return undefined;
    return memoized(e, this.ctx.corrupt, () => buildRequestFromJson(diskimage, decodeRecord(data, 'build-request', diskimage), stat.ctime), { diskimage });
  }

  /**
   * A pause: corrupt or not, the znode's existence is the operator's intent (Nodepool's pause is
   * an empty marker), so a corrupt one still pauses, with `since` its creation and a reason
   * saying it is corrupt; it is also named by {@link corrupt}.
   */
  private memoPause(diskimage: string, provider: string | null, e: Entry): PauseRecord | undefined {
    const { data, stat } = e;
    if (!data || !stat) return undefined;
    const rec = memoized(e, this.ctx.corrupt, () => pauseFromJson(diskimage, provider, decodeRecord(data, 'pause', pauseId(diskimage, provider)), statTime(stat.ctime)),
      { diskimage, provider });
    if (rec) return rec;
    const c = corruptEntry(e);
    return { diskimage, provider, since: statTime(stat.ctime), reason: `corrupt pause record (${c?.reason ?? 'unreadable'})` };
  }

  /** From the cache (call ctx.fresh() first): corrupt pauses and build requests, by diskimage. */
  corrupt(): CorruptRecord[] {
    const { layout, cache } = this.ctx;
    const out: CorruptRecord[] = [];
    const add = (e: Entry | undefined): void => {
      const c = e && corruptEntry(e);
      if (c) out.push(c);
    };
    for (const d of cache.children(layout.images)) {
      const req = cache.get(`${layout.images}/${d}/request-build`);
      if (req) this.memoRequest(d, req);
      add(req);
      const whole = cache.get(`${layout.images}/${d}/pause`);
      if (whole) this.memoPause(d, null, whole);
      add(whole);
      const dir = `${layout.images}/${d}/provider-pauses`;
      for (const p of cache.children(dir)) {
        const e = cache.get(`${dir}/${p}`);
        if (e) this.memoPause(d, p, e);
        add(e);
      }
    }
    return out;
  }

  async clearBuildRequest(diskimage: string, requestedUpTo: number): Promise<void> {
    const client = this.ctx.main();
    const path = this.ctx.layout.requestBuild(diskimage);
    for (let attempt = 1; attempt <= 50; attempt++) {
      const got = await client.getData(path);
      if (!got || requestedAtOf(got.data, got.stat.ctime) > requestedUpTo) return;
      try {
        await client.remove(path, got.stat.version);
        return;
      } catch (err) {
        if (!(err instanceof ZooKeeperError)) throw err;
        if (err.code === 'NO_NODE') return;
        if (err.code !== 'BAD_VERSION' && err.code !== 'CONNECTION_LOSS' && err.code !== 'OPERATION_TIMEOUT') throw err;
      }
    }
    throw new StoreError(`clearing the build request of ${diskimage}: it kept changing`);
  }

  async setPause(diskimage: string, provider: string | null, paused: boolean, reason?: string): Promise<void> {
    if (provider === '') throw new StoreError(`pausing ${diskimage}: provider must be null or a non-empty name`);
    const { layout } = this.ctx;
    const path = provider === null ? layout.pause(diskimage) : layout.providerPause(diskimage, provider);
    const client = this.ctx.main();
    if (!paused) {
      try {
        await client.remove(path);
      } catch (err) {
        if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
      }
      return;
    }
    const since = this.ctx.clock();
    // Pausing what is paused keeps `since`; a new reason replaces the old one.
    const kept = await updateJson(client, path, `pause of ${diskimage}`, (cur, stat) => {
      let old: PauseRecord;
      try {
        old = pauseFromJson(diskimage, provider, cur, statTime(stat.ctime));
      } catch (err) {
        // A corrupt pause is replaced by a good one.
        if (!(err instanceof CorruptRecordError)) throw err;
        return pauseJson({ since: statTime(stat.ctime), reason: reason ?? null });
      }
      if (reason === undefined && cur.since !== undefined) return null;
      return { ...cur, ...pauseJson({ since: old.since, reason: reason ?? old.reason }) };
    });
    if (kept) return;
    await ensure(client, layout.image(diskimage));
    if (provider !== null) await ensure(client, layout.providerPauses(diskimage));
    try {
      await client.create(path, encode(pauseJson({ since, reason: reason ?? null }), `pause of ${diskimage}`));
    } catch (err) {
      if (!(err instanceof ZooKeeperError && err.code === 'NODE_EXISTS')) throw err;
      await this.setPause(diskimage, provider, paused, reason);
    }
  }

  /** From the cache, by diskimage then provider (diskimage-wide first). */
  async listPauses(): Promise<PauseRecord[]> {
    await this.ctx.fresh();
    const { layout, cache } = this.ctx;
    const out: PauseRecord[] = [];
    for (const d of cache.children(layout.images)) {
      const whole = cache.get(`${layout.images}/${d}/pause`);
      const w = whole && this.memoPause(d, null, whole);
      if (w) out.push({ ...w });
      const dir = `${layout.images}/${d}/provider-pauses`;
      for (const p of cache.children(dir)) {
        const e = cache.get(`${dir}/${p}`);
        const r = e && this.memoPause(d, p, e);
        if (r) out.push({ ...r });
      }
    }
    return out;
  }

  async putStatus(key: string, value: unknown): Promise<void> {
    const path = this.ctx.layout.statusKey(key);
    await this.upsert(path, encode({ value, updated: toSeconds(this.ctx.clock()) }, `status ${key}`));
  }

  async getStatus<T>(key: string): Promise<{ value: T; updated: number } | undefined> {
    const got = await this.ctx.main().getData(this.ctx.layout.statusKey(key));
    if (!got) return undefined;
    const j = decode(got.data, `status ${key}`);
    return { value: j.value as T, updated: toMs(j.updated) };
  }

  /** Writes `data` at `path`, creating it (and `parent`) when missing. */
  private async upsert(path: string, data: Buffer, parent?: string): Promise<void> {
    const client = this.ctx.main();
    for (let attempt = 1; attempt <= 10; attempt++) {
      try {
        await client.setData(path, data);
        return;
      } catch (err) {
        if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
      }
      if (parent) await ensure(client, parent);
      try {
        await client.create(path, data);
        return;
      } catch (err) {
        if (!(err instanceof ZooKeeperError && err.code === 'NODE_EXISTS')) throw err;
      }
    }
    throw new StoreError(`writing ${path}: it kept appearing and vanishing`);
  }
}

