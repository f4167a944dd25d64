/**
 * Operator intents and published status in ZooKeeper: Nodepool's
 * `/nodepool/images/<diskimage>/request-build` and `…/pause` (with JSON where Nodepool writes
 * an empty marker; an empty one is read as made at its creation), this project's per-provider
 * pauses under `/nodepool/image-intents/<diskimage>/provider-pauses/<provider>`, upload retry
 * requests under `…/upload-retries/<provider>` (`{"requested"}` as a build request), pins and
 * revocations (rollout-intents.ts), and status values under `/nodepool/status/`.
 */
import { CorruptRecordError, StoreError, ZooKeeperError } from '../../errors.js';
import { corruptOf, Fields, type CorruptRecord } from '../corrupt.js';
import { checkDiskimageProvider } from '../checks.js';
import type { BuildRequest, PauseRecord, PinRecord, RevocationRecord, UploadRetryRequest } from '../models.js';
import { requestedAtOf } from './builds.js';
import { corruptEntry, memoized } from './checked.js';
import type { ZkContext } from './context.js';
import { pauseFromJson, pauseId, pauseJson } from './image-records.js';
import { moveLegacyIntents, type IntentMove } from './intent-move.js';
import {
  cachedIntents, corruptIntents, keepingSince, listIntents, removeIntent, upsert, writeIntent, type IntentPlaces, type IntentReader,
} from './intent-nodes.js';
import { decode, decodeRecord, encode, statTime, toMs, toSeconds, type Json } from './records.js';
import { ZkRolloutIntents } from './rollout-intents.js';
import type { Entry } from './tree-cache.js';

/** A build request's record. Thrown: CorruptRecordError when `requested` is not a time. */
export function buildRequestFromJson(diskimage: string, j: Json, ctime: Buffer): BuildRequest {
  const f: Fields = new Fields(j, 'build-request', diskimage);
  return { diskimage, requested: f.optSeconds('requested') ?? statTime(ctime) };
}

/** An upload retry request's record. Thrown: CorruptRecordError when `requested` is not a time. */
export function uploadRetryFromJson(diskimage: string, provider: string, j: Json, ctime: Buffer): UploadRetryRequest {
  const f: Fields = new Fields(j, 'upload-retry', `${diskimage}/${provider}`);
  return { diskimage, provider, requested: f.optSeconds('requested') ?? statTime(ctime) };
}

const PAUSES: IntentPlaces = { whole: 'pause', dir: 'provider-pauses' };

/**
 * A pause: corrupt or not, the znode's existence is the operator's intent (Nodepool's pause is
 * an empty marker), so a corrupt one still pauses, with `since` its creation and a reason
 * saying it is corrupt; it is also named by corrupt().
 */
const PAUSE_READER: IntentReader<PauseRecord> = {
  kind: 'pause',
  id: pauseId,
  where: (diskimage, provider) => ({ diskimage, provider }),
  parse: pauseFromJson,
  corrupt: (diskimage, provider, c, ctime) => ({ diskimage, provider, since: ctime, reason: `corrupt pause record (${c?.reason ?? 'unreadable'})` }),
};

/** Intents of one store handle. */
export class ZkIntents {
  private readonly rollout: ZkRolloutIntents;

  constructor(private readonly ctx: ZkContext) {
    this.rollout = new ZkRolloutIntents(ctx);
  }

  /** Moves the intents an older version kept under Nodepool's image tree to their place (intent-move.ts). */
  moveLegacy(): Promise<IntentMove> {
    return moveLegacyIntents(this.ctx);
  }

  async requestBuild(diskimage: string): Promise<BuildRequest> {
    const path = this.ctx.layout.requestBuild(diskimage);
    const requested = this.ctx.clock();
    await upsert(this.ctx.main(), path, encode({ requested: toSeconds(requested) }, `build request of ${diskimage}`), [this.ctx.layout.image(diskimage)]);
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

  /** From the cache (call ctx.fresh() first): corrupt build requests, upload retry requests, pauses, pins and revocations, by diskimage. */
  corrupt(): CorruptRecord[] {
    const { layout, cache } = this.ctx;
    const out: CorruptRecord[] = [];
    for (const d of cache.children(layout.images)) {
      const req = cache.get(`${layout.images}/${d}/request-build`);
      if (req) this.memoRequest(d, req);
      const c = req && corruptEntry(req);
      if (c) out.push(c);
    }
    for (const { diskimage, key, entry } of cachedIntents(this.ctx, { dir: 'upload-retries' })) {
      const { data, stat } = entry;
      if (key === null || !data || !stat) continue;
      try {
        uploadRetryFromJson(diskimage, key, decodeRecord(data, 'upload-retry', `${diskimage}/${key}`), stat.ctime);
      } catch (err) {
        if (!(err instanceof CorruptRecordError)) throw err;
        out.push(corruptOf(err, { diskimage, provider: key }));
      }
    }
    return [...out, ...corruptIntents(this.ctx, PAUSES, PAUSE_READER), ...this.rollout.corrupt()];
  }

  async clearBuildRequest(diskimage: string, requestedUpTo: number): Promise<void> {
    await this.clearRequested(this.ctx.layout.requestBuild(diskimage), requestedUpTo, `the build request of ${diskimage}`);
  }

  async requestUploadRetry(diskimage: string, provider: string): Promise<UploadRetryRequest> {
    checkDiskimageProvider(diskimage, provider, `requesting an upload retry of ${diskimage} on ${provider}`);
    const { layout } = this.ctx;
    const requested = this.ctx.clock();
    const path = layout.uploadRetry(diskimage, provider);
    await upsert(this.ctx.main(), path, encode({ requested: toSeconds(requested) }, `upload retry request of ${diskimage} on ${provider}`), layout.intentParents(path));
    return { diskimage, provider, requested };
  }

  /** From the cache, by diskimage then provider; corrupt ones are skipped (and logged once). */
  async listUploadRetries(): Promise<UploadRetryRequest[]> {
    await this.ctx.fresh();
    const out: UploadRetryRequest[] = [];
    for (const { diskimage, key, entry } of cachedIntents(this.ctx, { dir: 'upload-retries' })) {
      const { data, stat } = entry;
      if (key === null || !data || !stat) continue;
      try {
        out.push(uploadRetryFromJson(diskimage, key, decodeRecord(data, 'upload-retry', `${diskimage}/${key}`), stat.ctime));
      } catch (err) {
        if (!(err instanceof CorruptRecordError)) throw err;
        this.ctx.corrupt.reportSkipped(err, stat.version);
      }
    }
    return out;
  }

  async clearUploadRetry(diskimage: string, provider: string, requestedUpTo: number): Promise<void> {
    const { layout, cache } = this.ctx;
    const path = layout.uploadRetry(diskimage, provider);
    const what = `the upload retry request of ${diskimage} on ${provider}`;
    await this.clearRequested(path, requestedUpTo, what);
    // One an older version kept under Nodepool's image, not yet moved (intent-move.ts).
    const legacy = layout.legacyOf(path);
    if (legacy !== undefined && cache.get(legacy)) await this.clearRequested(legacy, requestedUpTo, what);
  }

  /** Removes the request at `path` when it was made at or before `requestedUpTo` (a newer one survives). */
  private async clearRequested(path: string, requestedUpTo: number, what: string): Promise<void> {
    const client = this.ctx.main();
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
    throw new StoreError(`clearing ${what}: it kept changing`);
  }

  async setPause(diskimage: string, provider: string | null, paused: boolean, reason?: string): Promise<void> {
    if (provider === '') throw new StoreError(`pausing ${diskimage}: provider must be null or a non-empty name`);
    const { layout } = this.ctx;
    const path = provider === null ? layout.pause(diskimage) : layout.providerPause(diskimage, provider);
    const client = this.ctx.main();
    if (!paused) return removeIntent(this.ctx, path);
    const since = this.ctx.clock();
    const parents = provider === null ? [layout.image(diskimage)] : layout.intentParents(path);
    // Pausing what is paused keeps `since`; a new reason replaces the old one.
    await writeIntent(client, path, `pause of ${diskimage}`, parents,
      keepingSince((j, ctime) => pauseFromJson(diskimage, provider, j, ctime), pauseJson, reason), () => pauseJson({ since, reason: reason ?? null }));
  }

  /** From the cache, by diskimage then provider (diskimage-wide first). */
  listPauses(): Promise<PauseRecord[]> {
    return listIntents(this.ctx, PAUSES, PAUSE_READER);
  }

  /** As ZkRolloutIntents.setPin. */
  setPin(diskimage: string, provider: string | null, buildId: string | null, reason?: string): Promise<PinRecord | null> {
    return this.rollout.setPin(diskimage, provider, buildId, reason);
  }

  listPins(): Promise<PinRecord[]> {
    return this.rollout.listPins();
  }

  /** As ZkRolloutIntents.setRevocation. */
  setRevocation(diskimage: string, buildId: string, revoked: boolean, reason?: string): Promise<void> {
    return this.rollout.setRevocation(diskimage, buildId, revoked, reason);
  }

  listRevocations(): Promise<RevocationRecord[]> {
    return this.rollout.listRevocations();
  }

  async putStatus(key: string, value: unknown): Promise<void> {
    const path = this.ctx.layout.statusKey(key);
    await upsert(this.ctx.main(), path, encode({ value, updated: toSeconds(this.ctx.clock()) }, `status ${key}`));
  }

  async getStatus<T>(key: string): Promise<{ value: T; updated: number } | undefined> {
    const got = await this.ctx.main().getData(this.ctx.layout.statusKey(key));
    if (!got) return undefined;
    const j = decode(got.data, `status ${key}`);
    return { value: j.value as T, updated: toMs(j.updated) };
  }
}
