/**
 * Moves this project's intents out of Nodepool's image tree (issue 31): older versions kept
 * pauses per provider, pins, revocations and upload retry requests under
 * `/nodepool/images/<diskimage>/`, where a Nodepool 11 launcher's image cache takes every
 * `<dir>/<key>` for a build (layout.ts). A writing open moves each to the same place under
 * `/nodepool/image-intents/`: the create there and the removal of the old one in one transaction,
 * so a record is in exactly one place at any time. Idempotent: a record already in its new place
 * (written there by this version meanwhile) wins, and the old one is removed.
 */
import { ZooKeeperError } from '../../errors.js';
import { ensure, type ZkContext } from './context.js';
import { OWN_IMAGE_DIRS, OWN_IMAGE_RECORDS, type Layout } from './layout.js';
import type { ZkClient } from './zk-client.js';

/** Attempts at one record while other writers change it. */
const MAX_ATTEMPTS = 10;

/** What one run moved: records moved (or dropped for one already in place), old directories removed. */
export interface IntentMove {
  moved: number;
  dirsRemoved: number;
}

/**
 * Moves every intent of ours still under Nodepool's image tree (read from the watched cache,
 * which keeps them) to its place under `image-intents`, then removes the emptied directories.
 * Thrown: ZooKeeperError when ZooKeeper fails (what was moved stays moved; the rest is read
 * where it is and moved at the next writing open).
 */
export async function moveLegacyIntents(ctx: ZkContext): Promise<IntentMove> {
  await ctx.fresh();
  const { layout, cache } = ctx;
  const client = ctx.main();
  const out: IntentMove = { moved: 0, dirsRemoved: 0 };
  for (const diskimage of cache.children(layout.images)) {
    const image = `${layout.images}/${diskimage}`;
    const old: string[] = OWN_IMAGE_RECORDS.map((name) => `${image}/${name}`).filter((p) => cache.get(p) !== undefined);
    for (const dir of OWN_IMAGE_DIRS) old.push(...cache.children(`${image}/${dir}`).map((key) => `${image}/${dir}/${key}`));
    for (const path of old) if (await moveOne(client, layout, path)) out.moved++;
    for (const dir of OWN_IMAGE_DIRS) {
      if (cache.get(`${image}/${dir}`) !== undefined && await removeEmptyDir(client, `${image}/${dir}`)) out.dirsRemoved++;
    }
  }
  return out;
}

/** Moves the record at `legacy` to its new place; false when it was gone already. */
async function moveOne(client: ZkClient, layout: Layout, legacy: string): Promise<boolean> {
  const target = layout.movedTo(legacy);
  if (target === undefined) return false;
  const what = `moving ${legacy} to ${target}`;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const got = await client.getData(legacy);
    if (!got) return false;
    for (const p of layout.intentParents(target)) await ensure(client, p);
    try {
      await client.multi([
        { op: 'create', path: target, data: got.data },
        { op: 'remove', path: legacy, version: got.stat.version },
      ], what);
      return true;
    } catch (err) {
      if (!(err instanceof ZooKeeperError)) throw err;
      if (err.code === 'NODE_EXISTS' && err.path === target) {
        // Written in its new place meanwhile (by this version): that one is newer; drop the old.
        if (await removeAt(client, legacy, got.stat.version)) return true;
        continue;
      }
      if (err.code === 'BAD_VERSION' || err.code === 'NO_NODE') continue;
      if (err.code !== 'CONNECTION_LOSS' && err.code !== 'OPERATION_TIMEOUT') throw err;
      // Lost mid-transaction: it applied if the old one is gone and the new one is there.
      if (!await client.exists(legacy) && await client.exists(target)) return true;
    }
  }
  throw new ZooKeeperError('BAD_VERSION', `${what}: other writers kept changing it (${MAX_ATTEMPTS} attempts)`, legacy);
}

/** Removes `path` at `version`; false when it changed meanwhile (read again), true when removed or gone. */
async function removeAt(client: ZkClient, path: string, version: number): Promise<boolean> {
  try {
    await client.remove(path, version);
    return true;
  } catch (err) {
    if (err instanceof ZooKeeperError && err.code === 'NO_NODE') return true;
    if (err instanceof ZooKeeperError && err.code === 'BAD_VERSION') return false;
    throw err;
  }
}

/** Removes the directory `path` when it is empty; false when a child came meanwhile (an older version still writing there). */
async function removeEmptyDir(client: ZkClient, path: string): Promise<boolean> {
  try {
    await client.remove(path);
    return true;
  } catch (err) {
    if (err instanceof ZooKeeperError && (err.code === 'NOT_EMPTY' || err.code === 'NO_NODE')) return false;
    throw err;
  }
}
