/**
 * Counting in a znode's JSON (an upload's launches, issue 24): a version-checked
 * read-modify-write repeated while other writers come first, as updateJson (context.ts) does,
 * but never taking a znode that holds the bytes we meant to write for our own write: two
 * launchers that count from the same value write the same JSON, and only one of them counted.
 * After a lost connection ours applied when the znode is at the next version holding our
 * bytes (another writer's identical count at that moment cannot be told apart: one count may
 * then be missing, never one too many).
 */
import { ZooKeeperError } from '../../errors.js';
import { decode, encode, type Json } from './records.js';
import type { ZkClient } from './zk-client.js';

/** Attempts while other writers keep counting first (every attempt lost is another's count). */
const MAX_ATTEMPTS = 500;

const lost = (err: unknown): boolean => err instanceof ZooKeeperError && (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT');

/**
 * Writes `count(current JSON)` at `path` at the version read; undefined when the znode does not
 * exist. `count` may throw (a corrupt record): nothing is written then.
 */
export async function countJson(client: ZkClient, path: string, what: string, count: (cur: Json) => Json): Promise<Json | undefined> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const got = await client.getData(path);
    if (!got) return undefined;
    const next = count(decode(got.data, what));
    const written = encode(next, what);
    try {
      await client.setData(path, written, got.stat.version);
      return next;
    } catch (err) {
      if (err instanceof ZooKeeperError && err.code === 'NO_NODE') return undefined;
      if (err instanceof ZooKeeperError && err.code === 'BAD_VERSION') continue;
      if (!lost(err)) throw err;
    }
    const after = await client.getData(path);
    if (!after) return undefined;
    if (after.stat.version === got.stat.version + 1 && after.data.equals(written)) return next;
  }
  throw new ZooKeeperError('BAD_VERSION', `${what}: other writers kept counting at ${path} (${MAX_ATTEMPTS} attempts)`, path);
}
