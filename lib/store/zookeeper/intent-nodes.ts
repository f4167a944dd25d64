/**
 * What the ZooKeeper store's operator intents share (Nodepool's pause under
 * `/nodepool/images/<diskimage>`, and this project's pauses per provider, pins, revocations and
 * upload retries under `/nodepool/image-intents/<diskimage>`, layout.ts): walking them in the
 * watched cache (also where an older version kept ours, until they are moved), reading one once
 * per version with corrupt ones set aside, writing one (read-modify-write when it exists, else a
 * create under its parents) and removing one.
 */
import { CorruptRecordError, StoreError, ZooKeeperError } from '../../errors.js';
import type { CorruptKind, CorruptRecord } from '../corrupt.js';
import { corruptEntry, memoized, type RecordWhere } from './checked.js';
import { ensure, updateJson, type ZkContext } from './context.js';
import { OWN_IMAGE_RECORDS } from './layout.js';
import { decodeRecord, encode, statTime, type Json } from './records.js';
import type { Entry } from './tree-cache.js';
import type { ZkClient } from './zk-client.js';
import type { Stat } from './zk-library.js';

/**
 * Where one kind of intent lives under a diskimage: one znode (`whole`: Nodepool's `pause`
 * under its image, or one of OWN_IMAGE_RECORDS under ours), and/or one child per key of `dir`
 * (one of OWN_IMAGE_DIRS, ours).
 */
export interface IntentPlaces {
  whole?: string;
  dir?: string;
}

/** A cached intent znode: its diskimage, its key (null: the `whole` one) and its entry. */
export interface CachedIntent {
  diskimage: string;
  key: string | null;
  entry: Entry;
}

/**
 * Cached intent znodes, by diskimage then key (the `whole` one first). One of ours still where
 * an older version kept it (under Nodepool's image) is read there, unless it is also in its
 * place now (that one wins). Call ctx.fresh() first.
 */
export function* cachedIntents(ctx: ZkContext, places: IntentPlaces): Generator<CachedIntent> {
  const { layout, cache } = ctx;
  const diskimages = [...new Set([...cache.children(layout.images), ...cache.children(layout.imageIntents)])].sort();
  for (const diskimage of diskimages) {
    const legacy = `${layout.images}/${diskimage}`;
    const own = `${layout.imageIntents}/${diskimage}`;
    if (places.whole !== undefined) {
      const ours = OWN_IMAGE_RECORDS.includes(places.whole);
      const entry = cache.get(`${ours ? own : legacy}/${places.whole}`) ?? (ours ? cache.get(`${legacy}/${places.whole}`) : undefined);
      if (entry) yield { diskimage, key: null, entry };
    }
    if (places.dir !== undefined) {
      const dir = `${own}/${places.dir}`;
      const oldDir = `${legacy}/${places.dir}`;
      for (const key of [...new Set([...cache.children(dir), ...cache.children(oldDir)])].sort()) {
        const entry = cache.get(`${dir}/${key}`) ?? cache.get(`${oldDir}/${key}`);
        if (entry) yield { diskimage, key, entry };
      }
    }
  }
}

/** How to read one kind of intent's JSON. */
export interface IntentReader<T> {
  kind: CorruptKind;
  /** The id a corrupt one is named by. */
  id(diskimage: string, key: string | null): string;
  where(diskimage: string, key: string | null): RecordWhere;
  /** Thrown: CorruptRecordError. `ctimeMs`: the znode's creation, for a record without a time. */
  parse(diskimage: string, key: string | null, j: Json, ctimeMs: number): T;
  /**
   * What a corrupt one still stands for (its znode's existence is the operator's intent), or
   * undefined to skip it. `ctimeMs`: the znode's creation.
   */
  corrupt?(diskimage: string, key: string | null, c: CorruptRecord | undefined, ctimeMs: number): T | undefined;
}

/** The record of a cached intent, parsed once per data version (see IntentReader.corrupt for corrupt ones). */
export function readIntent<T>(ctx: ZkContext, reader: IntentReader<T>, i: CachedIntent): T | undefined {
  const { data, stat } = i.entry;
  if (!data || !stat) return undefined;
  const ctime = statTime(stat.ctime);
  const rec = memoized(i.entry, ctx.corrupt, () => reader.parse(i.diskimage, i.key, decodeRecord(data, reader.kind, reader.id(i.diskimage, i.key)), ctime),
    reader.where(i.diskimage, i.key));
  if (rec !== undefined || !reader.corrupt) return rec;
  return reader.corrupt(i.diskimage, i.key, corruptEntry(i.entry), ctime);
}

/** Every intent of `places` as `reader` reads it (fresh copies), by diskimage then key. */
export async function listIntents<T extends object>(ctx: ZkContext, places: IntentPlaces, reader: IntentReader<T>): Promise<T[]> {
  await ctx.fresh();
  const out: T[] = [];
  for (const i of cachedIntents(ctx, places)) {
    const rec = readIntent(ctx, reader, i);
    if (rec) out.push({ ...rec });
  }
  return out;
}

/** The corrupt intents of `places`, from the cache (call ctx.fresh() first). */
export function corruptIntents<T>(ctx: ZkContext, places: IntentPlaces, reader: IntentReader<T>): CorruptRecord[] {
  const out: CorruptRecord[] = [];
  for (const i of cachedIntents(ctx, places)) {
    readIntent(ctx, reader, i);
    const c = corruptEntry(i.entry);
    if (c) out.push(c);
  }
  return out;
}

/**
 * Writes the intent znode at `path`: when it exists, `mutate` derives the new JSON from the
 * current one (null: leave it as it is; version-checked, see updateJson); when it does not,
 * `parents` are made level by level and `initial` is created.
 */
export async function writeIntent(client: ZkClient, path: string, what: string, parents: readonly string[],
  mutate: (cur: Json, stat: Stat) => Json | null, initial: () => Json): Promise<void> {
  for (let attempt = 1; attempt <= 10; attempt++) {
    if (await updateJson(client, path, what, mutate)) return;
    for (const p of parents) await ensure(client, p);
    try {
      await client.create(path, encode(initial(), what));
      return;
    } catch (err) {
      // Another writer created it meanwhile: read-modify-write theirs.
      if (!(err instanceof ZooKeeperError && err.code === 'NODE_EXISTS')) throw err;
    }
  }
  throw new StoreError(`${what}: ${path} kept appearing and vanishing`);
}

/**
 * Removes the intent znode at `path`; fine when it is not there. One of ours that an older
 * version kept under Nodepool's image, not yet moved, goes too (else it would count again).
 */
export async function removeIntent(ctx: ZkContext, path: string): Promise<void> {
  const client = ctx.main();
  await removeIfThere(client, path);
  const legacy = ctx.layout.legacyOf(path);
  if (legacy !== undefined && ctx.cache.get(legacy)) await removeIfThere(client, legacy);
}

async function removeIfThere(client: ZkClient, path: string): Promise<void> {
  try {
    await client.remove(path);
  } catch (err) {
    if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
  }
}

/**
 * The `mutate` of an intent that keeps its `since` when set again (pauses, revocations): a new
 * reason replaces the old one, none keeps it; a corrupt one is replaced by a good one (since:
 * its znode's creation). `parse` throws CorruptRecordError; `json` makes the record's JSON.
 */
export function keepingSince(parse: (j: Json, ctimeMs: number) => { since: number; reason: string | null },
  json: (r: { since: number; reason: string | null }) => Json, reason: string | undefined): (cur: Json, stat: Stat) => Json | null {
  return (cur, stat) => {
    const ctime = statTime(stat.ctime);
    let old: { since: number; reason: string | null };
    try {
      old = parse(cur, ctime);
    } catch (err) {
      if (!(err instanceof CorruptRecordError)) throw err;
      return json({ since: ctime, reason: reason ?? null });
    }
    if (reason === undefined && cur.since !== undefined) return null;
    return { ...cur, ...json({ since: old.since, reason: reason ?? old.reason }) };
  };
}

/** Writes `data` at `path`, whatever was there, creating it (and `parents`, level by level) when missing. */
export async function upsert(client: ZkClient, path: string, data: Buffer, parents: readonly string[] = []): Promise<void> {
  for (let attempt = 1; attempt <= 10; attempt++) {
    try {
      await client.setData(path, data);
      return;
    } catch (err) {
      if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
    }
    for (const p of parents) await ensure(client, p);
    try {
      await client.create(path, data);
      return;
    } catch (err) {
      if (!(err instanceof ZooKeeperError && err.code === 'NODE_EXISTS')) throw err;
    }
  }
  throw new StoreError(`writing ${path}: it kept appearing and vanishing`);
}
