/**
 * Operator intents and published status in ZooKeeper: Nodepool's
 * `/nodepool/images/<diskimage>/request-build` and `…/pause` (with JSON where Nodepool writes
 * an empty marker; an empty one is read as made at its creation), this project's per-provider
 * pauses under `…/provider-pauses/<provider>`, and status values under `/nodepool/status/`.
 */
import { StoreError, ZooKeeperError } from '../../errors.js';
import type { BuildRequest, PauseRecord } from '../models.js';
import { requestedAt } from './builds.js';
import { ensure, updateJson, type ZkContext } from './context.js';
import { decode, encode, pauseFromJson, pauseJson, statTime, toMs, toSeconds } from './records.js';

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
      if (e?.data && e.stat) out.push({ diskimage: d, requested: requestedAt(decode(e.data, `build request of ${d}`), e.stat.ctime) });
    }
    return out;
  }

  async clearBuildRequest(diskimage: string, requestedUpTo: number): Promise<void> {
    const client = this.ctx.main();
    const path = this.ctx.layout.requestBuild(diskimage);
    for (let attempt = 1; attempt <= 50; attempt++) {
      const got = await client.getData(path);
      if (!got || requestedAt(decode(got.data, `build request of ${diskimage}`), got.stat.ctime) > requestedUpTo) return;
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
      const old = pauseFromJson(diskimage, provider, cur, statTime(stat.ctime));
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
      if (whole?.data && whole.stat) out.push(pauseFromJson(d, null, decode(whole.data, `pause of ${d}`), statTime(whole.stat.ctime)));
      const dir = `${layout.images}/${d}/provider-pauses`;
      for (const p of cache.children(dir)) {
        const e = cache.get(`${dir}/${p}`);
        if (e?.data && e.stat) out.push(pauseFromJson(d, p, decode(e.data, `pause of ${d} on ${p}`), statTime(e.stat.ctime)));
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
