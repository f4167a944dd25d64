/**
 * Locks with ZooKeeper's lock recipe, as kazoo's `Lock` does it, so a kazoo (Zuul, Nodepool)
 * lock and ours exclude each other: contenders create ephemeral sequential children
 * `<uuid hex>__lock__<seq>` of the lock path, and the lowest sequence holds the lock. tryLock
 * never waits: when ours is not the lowest it removes its child again and answers false (what
 * kazoo's `acquire(blocking=False)` does). The children are created through the store
 * session's own connection, so the lock goes when the session does.
 */
import { randomUUID } from 'node:crypto';
import { StoreError, ZooKeeperError } from '../../errors.js';
import { NODE_LOCK_PREFIX, REQUEST_LOCK_PREFIX } from '../lock-names.js';
import type { LockRecord } from '../models.js';
import { ensure, type ZkContext } from './context.js';
import { LOCK_DIR, LOCK_NODE_MARK } from './layout.js';
import { decode, encode, ownerOf, statTime, toMs, toSeconds } from './records.js';
import { RemoveBatch } from './remove-batch.js';
import type { ZkSessions } from './sessions.js';
import type { ZkClient } from './zk-client.js';
import { MODE } from './zk-library.js';

/** The sequence part of a contender's name (kazoo sorts by what follows `__lock__`). */
function seqOf(name: string): string {
  const at = name.lastIndexOf(LOCK_NODE_MARK);
  return at >= 0 ? name.slice(at + LOCK_NODE_MARK.length) : name.slice(-10);
}

const byQueue = (a: string, b: string): number => (seqOf(a) < seqOf(b) ? -1 : seqOf(a) > seqOf(b) ? 1 : 0);

/** A call whose answer never came: ZooKeeper may have applied it, or may still. */
const unanswered = (err: unknown): boolean => err instanceof ZooKeeperError && (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT');

/** Locks of one store handle. */
export class ZkLocks {
  /** Unlocks of one tick go out as one transaction. */
  private readonly removes: RemoveBatch;

  constructor(private readonly ctx: ZkContext, private readonly sessions: ZkSessions) {
    this.removes = new RemoveBatch(() => ctx.main());
  }

  /**
   * Contenders this handle created and still holds, by resource, then session (unlock removes
   * them in one call instead of listing the lock and reading every child).
   */
  private readonly held = new Map<string, Map<string, { path: string; tick: number }>>();

  /**
   * Contenders whose create was sent but never answered (the connection lost, or no answer
   * within the call's deadline), by resource: name prefixes. The library sends such a request
   * again after a reconnect, and ZooKeeper may apply it after we gave up on it: a contender of
   * our own session that nobody holds and nobody removes, which would hold the lock against
   * everyone for the session's life (CI, 2026-12-02: a node the deleter could never lock after
   * a 10 s ZooKeeper outage). The next attempt on the resource that lists its lock removes it,
   * as kazoo finds its node by its prefix after a connection loss.
   */
  private readonly orphans = new Map<string, Set<string>>();

  /**
   * A contender this handle created for `resource` and believes it still holds (full path),
   * with the tick of when the lock was taken; the first found when several sessions hold it.
   */
  contender(resource: string): { path: string; tick: number } | undefined {
    const bySession = this.held.get(resource);
    return bySession ? bySession.values().next().value : undefined;
  }

  /**
   * Creates our contender first (the lock directory only when that fails with NO_NODE), then
   * lists the queue: two round trips when the lock is free. When a lower contender exists
   * ours is taken back, and the answer depends on whose the holder is (re-entrant per session).
   */
  async tryLock(resource: string, sessionId: string, exclusive: boolean): Promise<boolean> {
    const path = this.ctx.layout.lockPath(resource);
    // A request's lock directory is usually new at its first lock: try making it first.
    return this.attempt(resource, path, sessionId, exclusive, path.startsWith(`${this.ctx.layout.requestsLock}/`));
  }

  private async attempt(resource: string, path: string, sessionId: string, exclusive: boolean, dirFirst: boolean): Promise<boolean> {
    const client = this.sessions.client(sessionId, `cannot lock ${resource}`);
    const prefix = `${randomUUID().replace(/-/g, '')}${LOCK_NODE_MARK}`;
    const data = encode({ session: sessionId, acquired_time: toSeconds(this.ctx.clock()) }, `lock ${resource}`);
    const child = `${path}/${prefix}`;
    if (dirFirst) {
      // The lock directory and our child in one transaction; NODE_EXISTS: the directory was there.
      try {
        const made = (await client.multi([{ op: 'create', path }, { op: 'create', path: child, data, mode: MODE.ephemeralSequential }], `locking ${resource}`))[1]?.path;
        // Our child is the first child of a directory made with it, so it has the lowest
        // sequence (a later contender's is higher, as ZooKeeper numbers children by the parent's
        // child count): held, no listing needed (one round trip).
        if (made !== undefined) return this.hold(resource, sessionId, made);
      } catch (err) {
        if (unanswered(err)) this.noteOrphan(resource, prefix);
        if (!(err instanceof ZooKeeperError && (err.code === 'NO_NODE' || err.code === 'NODE_EXISTS'))) throw err;
        if (err.code === 'NO_NODE') {
          await this.makeLockDir(client, path);
          return this.attempt(resource, path, sessionId, exclusive, false);
        }
      }
    }
    // Our contender's create and the listing go out together: ZooKeeper answers one session's
    // requests in the order sent, so the listing already shows our contender (one round trip).
    const [created, listed] = await Promise.allSettled([client.create(child, data, MODE.ephemeralSequential), client.getChildren(path)]);
    if (created.status === 'rejected') {
      const err: unknown = created.reason;
      if (unanswered(err)) this.noteOrphan(resource, prefix);
      if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
      if (!dirFirst) return this.attempt(resource, path, sessionId, exclusive, true);
      await this.makeLockDir(client, path);
      return this.attempt(resource, path, sessionId, exclusive, false);
    }
    const mine = created.value.slice(created.value.lastIndexOf('/') + 1);
    const listing = listed.status === 'fulfilled' ? listed.value ?? [] : await client.getChildren(path) ?? [];
    const after = (await this.removeOrphans(client, resource, path, listing)).sort(byQueue);
    if (after[0] === mine) return this.hold(resource, sessionId, created.value);
    // Not first: take our child back (kazoo's non-blocking acquire does the same).
    const first = await this.holderOf(client, path, after.filter((n) => n !== mine));
    await client.remove(created.value).catch((err: unknown) => {
      if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
    });
    if (first?.sessionId === sessionId) return !exclusive;
    return false;
  }

  /** Records the contender at `contender` (full path) as this handle's hold of `resource` for the session. */
  private hold(resource: string, sessionId: string, contender: string): true {
    let bySession = this.held.get(resource);
    if (!bySession) this.held.set(resource, bySession = new Map());
    bySession.set(sessionId, { path: contender, tick: this.ctx.tick() });
    return true;
  }

  /**
   * Releases every child the session has under the lock; false when it had none. A lock this
   * handle took is released by removing the child it created (one round trip); otherwise, or
   * when that child is gone already, the lock's children are read to find the session's.
   */
  async unlock(resource: string, sessionId: string): Promise<boolean> {
    const client = this.ctx.main();
    const known = this.held.get(resource)?.get(sessionId)?.path;
    if (known !== undefined) {
      this.forget(resource, sessionId);
      try {
        await this.removes.remove(known);
        return true;
      } catch (err) {
        if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
      }
    }
    const path = this.ctx.layout.lockPath(resource);
    let released = false;
    for (const name of await client.getChildren(path) ?? []) {
      const got = await client.getData(`${path}/${name}`);
      if (!got || ownerOf(got.stat.ephemeralOwner) !== sessionId) continue;
      try {
        await client.remove(`${path}/${name}`, got.stat.version);
        released = true;
      } catch (err) {
        if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
      }
    }
    return released;
  }

  /** How many resources this handle believes it holds a contender on (diagnostics; bounded by what is locked now). */
  get heldCount(): number {
    return this.held.size;
  }

  /** The resource's lock went with its record (a node deleted with its lock): nothing of it is held any more. */
  gone(resource: string): void {
    this.held.delete(resource);
  }

  private noteOrphan(resource: string, prefix: string): void {
    let set = this.orphans.get(resource);
    if (!set) {
      // bounded: a handle that keeps losing answers forgets the oldest resources first
      if (this.orphans.size >= 1000) this.orphans.delete(this.orphans.keys().next().value as string);
      this.orphans.set(resource, set = new Set());
    }
    set.add(prefix);
  }

  /**
   * Removes the contenders of `names` (the lock's children) that are orphans of this handle
   * (see `orphans`), and answers the others. Sent through `client`, the session's own: it
   * reaches ZooKeeper after any create of that session still on its way, so one that applies
   * late is seen by a later call.
   */
  private async removeOrphans(client: ZkClient, resource: string, path: string, names: string[]): Promise<string[]> {
    const prefixes = this.orphans.get(resource);
    if (!prefixes) return names;
    const kept: string[] = [];
    for (const name of names) {
      const prefix = [...prefixes].find((p) => name.startsWith(p));
      if (prefix === undefined) { kept.push(name); continue; }
      await client.remove(`${path}/${name}`).catch((err: unknown) => {
        if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
      });
      prefixes.delete(prefix);
    }
    if (prefixes.size === 0) this.orphans.delete(resource);
    return kept;
  }

  private forget(resource: string, sessionId: string): void {
    const bySession = this.held.get(resource);
    bySession?.delete(sessionId);
    if (bySession?.size === 0) this.held.delete(resource);
  }

  async get(resource: string): Promise<LockRecord | undefined> {
    const client = this.ctx.main();
    const path = this.ctx.layout.lockPath(resource);
    const queue = await client.getChildren(path);
    if (!queue) return undefined;
    const h = await this.holderOf(client, path, queue);
    return h ? { resource, sessionId: h.sessionId, acquired: h.acquired, live: true } : undefined;
  }

  /** Held locks whose resource starts with `prefix`, by resource (reads each lock directory). */
  async list(prefix = ''): Promise<LockRecord[]> {
    const { layout, cache } = this.ctx;
    const client = this.ctx.main();
    // Contenders are created through the sessions' own clients: round trip on ours first.
    this.ctx.wroteElsewhere();
    await this.ctx.fresh();
    const resources: string[] = [];
    for (const id of cache.children(layout.nodes)) resources.push(`${NODE_LOCK_PREFIX}${id}`);
    for (const id of await client.getChildren(layout.requestsLock) ?? []) resources.push(`${REQUEST_LOCK_PREFIX}${id}`);
    for (const enc of await client.getChildren(layout.locks) ?? []) resources.push(decodeURIComponent(enc));
    const out: LockRecord[] = [];
    for (const r of resources.filter((x) => x.startsWith(prefix)).sort()) {
      const lock = await this.get(r);
      if (lock) out.push(lock);
    }
    return out;
  }

  /** The lowest contender that still exists, with its session and when it locked. */
  private async holderOf(client: ZkClient, path: string, queue: string[]): Promise<{ sessionId: string; acquired: number } | undefined> {
    for (const name of [...queue].sort(byQueue)) {
      const got = await client.getData(`${path}/${name}`);
      if (!got) continue;
      const owner = ownerOf(got.stat.ephemeralOwner);
      if (owner === null) continue;
      let acquired = statTime(got.stat.ctime);
      try {
        const j = decode(got.data, `lock ${path}/${name}`);
        if (typeof j.acquired_time === 'number') acquired = toMs(j.acquired_time);
      } catch {
        // a kazoo lock's data is its identifier, not JSON: the creation time stands
      }
      return { sessionId: owner, acquired };
    }
    return undefined;
  }

  /** Creates a lock directory; a node lock's parent (the node) is created empty when missing. */
  private async makeLockDir(client: ZkClient, path: string): Promise<void> {
    const parent = path.slice(0, path.lastIndexOf('/'));
    if (path.endsWith(`/${LOCK_DIR}`) && parent.startsWith(`${this.ctx.layout.nodes}/`)) {
      await ensure(client, parent);
      // The node's znode is in the cache: its next read must see this write of another client.
      this.ctx.wroteElsewhere();
    }
    try {
      await ensure(client, path);
    } catch (err) {
      throw new StoreError(`creating lock directory ${path}: ${(err as Error).message}`, { cause: err });
    }
  }
}
