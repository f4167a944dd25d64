/**
 * Uploads in ZooKeeper: `…/builds/<seq>/providers/<provider>/images/<upload id>`. Upload ids
 * come from one store-wide counter (`sequences/upload`), so an id alone names an upload; the
 * cache keeps an index from id to path. Under a Nodepool 11 build (`builds/<uuid hex>`) the
 * znode names are Nodepool's sequence per build and provider, so the id there is
 * `<hex>-<provider>-<name>` (image-file.ts uploadIdOf), ours and Nodepool's alike.
 */
import { StateConflictError, StoreError, ZooKeeperError } from '../../errors.js';
import type { CorruptRecord } from '../corrupt.js';
import { NODEPOOL_UPLOAD_STATE, type LaunchResult, type NewUpload, type UploadPatch, type UploadRecord, type UploadState } from '../models.js';
import { checkRolloutPatch, checkUploadState } from '../checks.js';
import type { ExpectRollout, ExpectState, UploadFilter } from '../store.js';
import { holdsRolloutSnapshot } from '../rollout-snapshot.js';
import { maxSeq, mergeJson, splitBuildId, type ZkBuilds } from './builds.js';
import { corruptEntry, memoized } from './checked.js';
import { ensure, updateJson, type ZkContext } from './context.js';
import { countJson } from './count-json.js';
import { seq10 } from './layout.js';
import { uploadImageFields, type ImageFields } from '../image-fields.js';
import { copyUpload, holdsOwnState, imageFieldsFromJson, LIFECYCLE_STATE, uploadFromJson, uploadJson } from './image-records.js';
import { decode, decodeRecord, encode } from './records.js';
import { UPLOAD_ID_RE, uploadIdOf } from '../../images/image-file.js';
import type { Entry } from './tree-cache.js';

/** Where an upload lives. */
interface UploadPlace {
  id: string;
  buildId: string;
  diskimage: string;
  provider: string;
  path: string;
}

/** Uploads of one store handle. */
export class ZkUploads {
  private index: { version: number; byId: Map<string, UploadPlace> } | undefined;

  constructor(private readonly ctx: ZkContext, private readonly builds: ZkBuilds) {}

  async create(input: NewUpload): Promise<UploadRecord> {
    const { layout, clock, cache } = this.ctx;
    const client = this.ctx.main();
    const parts = splitBuildId(input.buildId);
    const unknown = (): StoreError => new StoreError(`cannot create an upload of build ${input.buildId} to ${input.provider}: no such build`);
    if (!parts) throw unknown();
    const buildPath = layout.build(parts.diskimage, parts.seq);
    const dir = layout.providerImages(parts.diskimage, parts.seq, input.provider);
    let buildData = cache.get(buildPath)?.data;
    if (!cache.get(dir) || !buildData) {
      const build = await client.getData(buildPath);
      if (!build || build.data.length === 0) throw unknown();
      buildData = build.data;
      try {
        // Level by level, never mkdirp: a build deleted meanwhile must not come back as an empty znode.
        for (const p of [layout.providers(parts.diskimage, parts.seq), layout.provider(parts.diskimage, parts.seq, input.provider), dir]) await ensure(client, p);
      } catch (err) {
        if (err instanceof ZooKeeperError && err.code === 'NO_NODE') throw unknown();
        throw err;
      }
    }
    const imageFields = imageFieldsFor(input, buildData);
    let made: UploadRecord | undefined;
    // Uploads written without our counter (Nodepool's own, an import) are never taken again.
    const highest = maxSeq((await this.indexed(false)).keys());
    try {
      await this.ctx.sequences.next('upload', `creating an upload of ${input.buildId} to ${input.provider}`, (next) => {
        const now = clock();
        const value = Math.max(next, highest + 1);
        const id = uploadIdOf(parts.seq, input.provider, seq10(value));
        made = {
          id, buildId: input.buildId, diskimage: parts.diskimage, provider: input.provider, imageName: input.imageName,
          state: 'uploading', stateTime: now, created: now, externalId: null, externalName: input.externalName ?? null,
          format: null, reason: null, progress: null, ...imageFields,
        };
        return { value, ops: [
          { op: 'check', path: buildPath, version: -1 },
          { op: 'create', path: `${dir}/${seq10(value)}`, data: encode(uploadJson(made), `upload ${id}`) },
        ] };
      });
    } catch (err) {
      if (err instanceof ZooKeeperError && err.code === 'NO_NODE') throw unknown();
      throw err;
    }
    return made as UploadRecord;
  }

  async get(id: string): Promise<UploadRecord | undefined> {
    const place = await this.find(id);
    if (!place) return undefined;
    const got = await this.ctx.main().getData(place.path);
    if (!got) return undefined;
    return uploadFromJson(place, decodeRecord(got.data, 'upload', id));
  }

  /** From the cache: uploads by diskimage, provider, then id. */
  async list(filter: UploadFilter = {}): Promise<UploadRecord[]> {
    await this.ctx.fresh();
    if (filter.states?.length === 0) return [];
    const out: UploadRecord[] = [];
    for (const place of this.places(filter.diskimage ?? (filter.buildId ? splitBuildId(filter.buildId)?.diskimage ?? '' : undefined))) {
      if (filter.buildId !== undefined && place.buildId !== filter.buildId) continue;
      if (filter.provider !== undefined && place.provider !== filter.provider) continue;
      const rec = this.memo(place);
      if (!rec || (filter.states && !filter.states.includes(rec.state))) continue;
      out.push(copyUpload(rec));
    }
    return out.sort((a, b) => cmp(a.diskimage, b.diskimage) || cmp(a.provider, b.provider) || cmp(a.id, b.id));
  }

  /** From the cache: the corrupt uploads, by diskimage, build, provider, then id. */
  corrupt(): CorruptRecord[] {
    const out: CorruptRecord[] = [];
    for (const place of this.places()) {
      this.memo(place);
      const entry = this.ctx.cache.get(place.path);
      const c = entry && corruptEntry(entry);
      if (c) out.push(c);
    }
    return out;
  }

  async update(id: string, patch: UploadPatch, opts: ExpectState<UploadState> & ExpectRollout = {}): Promise<UploadRecord | undefined> {
    if (patch.state !== undefined) checkUploadState(patch.state, `updating upload ${id}`);
    checkRolloutPatch(patch, `updating upload ${id}`);
    const place = await this.find(id);
    if (!place) return undefined;
    const now = this.ctx.clock();
    const done = await updateJson(this.ctx.main(), place.path, `upload ${id}`, (cur) => {
      const rec = uploadFromJson(place, cur);
      const expect = opts.expectStates;
      if (expect && !expect.includes(rec.state)) {
        throw new StateConflictError(id, rec.state, `upload ${id} is ${rec.state}, expected ${expect.join(' or ') || 'no state at all'}`);
      }
      // Read at the znode's version and written at it (updateJson), so nothing counts in between.
      if (opts.expectRollout && !holdsRolloutSnapshot(rec, opts.expectRollout)) {
        throw new StateConflictError(id, rec.state, `upload ${id}: its launch counts or rollout decision changed since they were read`);
      }
      const next = { ...rec };
      if (patch.state !== undefined && patch.state !== rec.state) { next.state = patch.state; next.stateTime = now; }
      if (patch.externalId !== undefined) next.externalId = patch.externalId;
      if (patch.externalName !== undefined) next.externalName = patch.externalName;
      if (patch.format !== undefined) next.format = patch.format;
      if (patch.reason !== undefined) next.reason = patch.reason;
      if (patch.progress !== undefined) next.progress = patch.progress === null ? null : { ...patch.progress };
      if (patch.launches !== undefined) next.launches = patch.launches;
      if (patch.launchFailures !== undefined) next.launchFailures = patch.launchFailures;
      if (patch.rollout !== undefined) next.rollout = patch.rollout === null ? null : { ...patch.rollout };
      return mergeJson(cur, uploadJson(next), [LIFECYCLE_STATE]);
    });
    return done ? uploadFromJson(place, done.json) : undefined;
  }

  /**
   * Rewrites the uploads this program stored before issue 31 with `validating` in Nodepool's
   * `state` field: `uploading` there, `validating` beside it (as ZkBuilds.restateOwn). Returns how many.
   */
  async restateOwn(): Promise<number> {
    let done = 0;
    for (const place of [...(await this.indexed()).values()]) {
      const entry = this.ctx.cache.get(place.path);
      const rec = this.memo(place);
      if (!rec || !holdsOwnState(entry?.data, NODEPOOL_UPLOAD_STATE)) continue;
      try {
        if (await this.update(place.id, {}, { expectStates: [rec.state] })) done += 1;
      } catch (err) {
        if (!(err instanceof StateConflictError)) throw err;
      }
    }
    return done;
  }

  /**
   * Counts one launch from upload `id`: a version-checked read-modify-write (count-json.ts),
   * repeated when another launcher counted first, so no count is lost however many hosts count at once.
   * Undefined when the upload is gone. Thrown: CorruptRecordError (a corrupt upload is not counted).
   */
  async recordLaunch(id: string, result: LaunchResult): Promise<UploadRecord | undefined> {
    const place = await this.find(id);
    if (!place) return undefined;
    const done = await countJson(this.ctx.main(), place.path, `upload ${id}`, (cur) => {
      const rec = uploadFromJson(place, cur);
      const counted = result === 'success' ? { launches: (rec.launches ?? 0) + 1 } : { launch_failures: (rec.launchFailures ?? 0) + 1 };
      return { ...cur, ...counted };
    });
    return done ? uploadFromJson(place, done) : undefined;
  }

  async delete(id: string): Promise<boolean> {
    const place = await this.find(id);
    if (!place) return false;
    try {
      await this.ctx.main().remove(place.path);
      return true;
    } catch (err) {
      if (err instanceof ZooKeeperError && err.code === 'NO_NODE') return false;
      if (err instanceof ZooKeeperError && (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT')) {
        return !await this.ctx.main().exists(place.path);
      }
      throw err;
    }
  }

  /** Where upload `id` is, from the cache's index. */
  private async find(id: string): Promise<UploadPlace | undefined> {
    if (!UPLOAD_ID_RE.test(id)) return undefined;
    return (await this.indexed()).get(id);
  }

  /** The cache's uploads by id, rebuilt when the cache changed; `fresh`: after this handle's writes show. */
  private async indexed(fresh = true): Promise<Map<string, UploadPlace>> {
    if (fresh) await this.ctx.fresh();
    const { cache } = this.ctx;
    if (!this.index || this.index.version !== cache.version) {
      const byId = new Map<string, UploadPlace>();
      for (const place of this.places()) byId.set(place.id, place);
      this.index = { version: cache.version, byId };
    }
    return this.index.byId;
  }

  /** Cached uploads (of one diskimage, or all). */
  private *places(diskimage?: string): Generator<UploadPlace> {
    const { cache } = this.ctx;
    for (const b of this.builds.cached(diskimage)) {
      const providers = `${b.path}/providers`;
      for (const provider of cache.children(providers)) {
        const images = `${providers}/${provider}/images`;
        for (const name of cache.children(images)) {
          yield { id: uploadIdOf(b.seq, provider, name), buildId: b.id, diskimage: b.diskimage, provider, path: `${images}/${name}` };
        }
      }
    }
  }

  private memo(place: UploadPlace): UploadRecord | undefined {
    const entry: Entry | undefined = this.ctx.cache.get(place.path);
    if (!entry?.data || entry.data.length === 0) return undefined;
    const data = entry.data;
    return memoized(entry, this.ctx.corrupt, () => uploadFromJson(place, decodeRecord(data, 'upload', place.id)),
      { diskimage: place.diskimage, provider: place.provider });
  }
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Nodepool 11's image fields of a new upload (lib/store/image-fields.ts), the build's read
 * from its JSON; a corrupt build record says nothing of them.
 */
function imageFieldsFor(input: NewUpload, buildData: Buffer | undefined): ImageFields {
  let build: ImageFields = {};
  try {
    if (buildData) build = imageFieldsFromJson(decode(buildData, 'build'));
  } catch {
    // a corrupt build record: the upload says nothing of it
  }
  return uploadImageFields(input, build);
}
