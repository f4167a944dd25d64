/**
 * What the entity modules of the ZooKeeper store share: the layout, the current main client,
 * the watched cache, the clock and the sequences; plus the two write patterns every entity
 * uses (version-checked read-modify-write, and removing a subtree in one transaction), both
 * safe to repeat after a lost connection.
 */
import { ZooKeeperError } from '../../errors.js';
import type { CorruptLog } from '../corrupt.js';
import type { Layout } from './layout.js';
import { decode, encode, type Json } from './records.js';
import type { Sequences } from './sequences.js';
import type { TreeCache } from './tree-cache.js';
import type { ZkClient } from './zk-client.js';
import type { Op, Stat } from './zk-library.js';

/** Shared state of one store handle. */
export interface ZkContext {
  readonly layout: Layout;
  /** The store's own session (watches, cache, writes that belong to no store session). */
  main(): ZkClient;
  readonly cache: TreeCache;
  readonly clock: () => number;
  readonly sequences: Sequences;
  /** Resolves once the cache shows every write made through this handle so far. */
  fresh(): Promise<void>;
  /** Records that a write went through a store session's own client (fresh() then syncs first). */
  wroteElsewhere(): void;
  /** A number that goes up at every call: orders events of this handle (a lock taken, a read sent). */
  tick(): number;
  /** Where corrupt records are reported (once per version). */
  readonly corrupt: CorruptLog;
}

/** Attempts of a read-modify-write that other writers keep beating. */
const MAX_ATTEMPTS = 100;

const lost = (err: unknown): boolean => err instanceof ZooKeeperError && (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT');

/**
 * Reads the JSON at `path`, lets `mutate` derive the new JSON (null: nothing to write; it may
 * throw, e.g. StateConflictError) and writes it at the version read; repeats when another
 * writer came first. Undefined when the node does not exist. After a lost connection the node
 * is read again: holding what we wrote means our write applied. `cached` (the watched cache's
 * copy) is tried first; only for records whose path is never reused (requests), as a version
 * check cannot tell a later znode at the same path from the one cached, or with `guard`: ops
 * (checks) written in one transaction with it that prove the znode is the one `cached` was
 * read from (see ZkNodes.update).
 */
export async function updateJson(
  client: ZkClient, path: string, what: string, mutate: (cur: Json, stat: Stat) => Json | null, cached?: { data?: Buffer; stat?: Stat },
  guard?: readonly Op[],
): Promise<{ json: Json; stat: Stat } | undefined> {
  let written: Buffer | undefined;
  // First from a cached copy (one round trip): written at the cached version, so it applies only
  // when the copy is current. Anything else (a stale copy, or mutate refusing or having nothing
  // to write, which only a current copy may decide) goes on with a read below.
  if (cached?.data && cached.stat) {
    let next: Json | null = null;
    try {
      next = mutate(decode(cached.data, what), cached.stat);
    } catch {
      next = null;
    }
    if (next !== null) {
      written = encode(next, what);
      try {
        if (guard) {
          const results = await client.multi([...guard, { op: 'set', path, data: written, version: cached.stat.version }], `writing ${what}`);
          const stat = results[guard.length]?.stat;
          if (stat) return { json: next, stat };
        } else {
          const stat = await client.setData(path, written, cached.stat.version);
          return { json: next, stat };
        }
      } catch (err) {
        // Guarded: NO_NODE may be the guard's; the read below tells.
        if (err instanceof ZooKeeperError && err.code === 'NO_NODE' && !guard) return undefined;
        if (err instanceof ZooKeeperError && (err.code === 'BAD_VERSION' || err.code === 'NO_NODE')) written = undefined;
        else if (!lost(err)) throw err;
      }
    }
  }
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const got = await client.getData(path);
    if (!got) return undefined;
    if (written && got.data.equals(written)) return { json: decode(got.data, what), stat: got.stat };
    const cur = decode(got.data, what);
    const next = mutate(cur, got.stat);
    if (next === null) return { json: cur, stat: got.stat };
    written = encode(next, what);
    try {
      const stat = await client.setData(path, written, got.stat.version);
      return { json: next, stat };
    } catch (err) {
      if (err instanceof ZooKeeperError && err.code === 'NO_NODE') return undefined;
      // A refused write is not ours, even when another writer wrote the same bytes (two counts from one value).
      if (err instanceof ZooKeeperError && err.code === 'BAD_VERSION') {
        written = undefined;
        continue;
      }
      if (!lost(err)) throw err;
    }
  }
  throw new ZooKeeperError('BAD_VERSION', `${what}: other writers kept changing ${path} (${MAX_ATTEMPTS} attempts)`, path);
}

/** Ops that remove `path` and everything below it (deepest first), read now. */
export async function removeTreeOps(client: ZkClient, path: string): Promise<Op[]> {
  const children = await client.getChildren(path);
  if (children === undefined) return [];
  const ops: Op[] = [];
  for (const name of children) ops.push(...await removeTreeOps(client, `${path}/${name}`));
  ops.push({ op: 'remove', path, version: -1 });
  return ops;
}

/**
 * Removes `path` with everything below it in one transaction; false when it did not exist.
 * Tried first as a leaf (most records have no children: no listing); a child there, or one
 * created meanwhile, fails the transaction (NOT_EMPTY) and the tree is read again. `extra`
 * adds what goes with it, told the attempt (0: the leaf try).
 */
export async function removeTree(client: ZkClient, path: string, what: string,
  extra: (ops: Op[], attempt: number) => Promise<Op[]> = async (o) => o): Promise<boolean> {
  for (let attempt = 0; attempt <= MAX_ATTEMPTS; attempt++) {
    const ops = await extra(attempt === 0 ? [{ op: 'remove', path, version: -1 }] : await removeTreeOps(client, path), attempt);
    if (ops.length === 0) return false;
    try {
      await client.multi(ops, what);
      return true;
    } catch (err) {
      // The leaf try found no node there: nothing to remove (a later try reads the tree to tell).
      if (attempt === 0 && err instanceof ZooKeeperError && err.code === 'NO_NODE' && err.path === path) return false;
      if (err instanceof ZooKeeperError && (err.code === 'NOT_EMPTY' || err.code === 'NO_NODE')) continue;
      if (!lost(err)) throw err;
      // Lost mid-transaction: it applied if the node is gone now.
      if (!await client.exists(path)) return true;
    }
  }
  throw new ZooKeeperError('NOT_EMPTY', `${what}: ${path} kept changing (${MAX_ATTEMPTS} attempts)`, path);
}

/** Creates `path`, fine when it exists already (also when a lost connection hid our own create). */
export async function ensure(client: ZkClient, path: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.create(path, Buffer.alloc(0));
      return;
    } catch (err) {
      if (err instanceof ZooKeeperError && err.code === 'NODE_EXISTS') return;
      if (!lost(err) || attempt >= 3) throw err;
    }
  }
}
