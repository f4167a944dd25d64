/**
 * Nodes in ZooKeeper: `/nodepool/nodes/<10-digit id>` with Nodepool's JSON, and the node lock at
 * `…/<id>/lock` (made with the node). Ids come from the counter `sequences/node` (start at 1,
 * never reused). A lock taken on a node id that has no record yet leaves an empty znode at the
 * node's path (the lock recipe needs a parent); readers skip empty znodes and a later create
 * fills it in. An update under this handle's lock may write at the version of a read made
 * under that lock, guarded by its lock contender (see guardedRead).
 */
import { isDeepStrictEqual } from 'node:util';
import { StateConflictError, StoreError, ZooKeeperError } from '../../errors.js';
import type { CorruptRecord } from '../corrupt.js';
import { NODE_DEFAULTS, type NewNode, type NodePatch, type NodeRecord, type NodeState } from '../models.js';
import { checkStringList } from '../checks.js';
import { checkNodeState } from '../checks.js';
import type { ExpectState, IdleDelete, NodeClaim, NodeFilter } from '../store.js';
import { corruptEntry, memoized } from './checked.js';
import { removeTree, updateJson, type ZkContext } from './context.js';
import { maxSeq } from './builds.js';
import { LOCK_DIR, seq10 } from './layout.js';
import { copyNode, nodeFromJson, nodeJson } from './node-records.js';
import { decodeRecord, encode } from './records.js';
import type { Op, Stat } from './zk-library.js';

/** Reads of node records {@link ZkNodes.update} may write at (bounded; cleared when full). */
const MAX_READS_KEPT = 5000;

/** The JSON object in `data`, or undefined when it is not one (a corrupt record may hold anything). */
function lenientObject(data: Buffer): Record<string, unknown> | undefined {
  try {
    const j: unknown = JSON.parse(data.toString('utf8'));
    return typeof j === 'object' && j !== null && !Array.isArray(j) ? j as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

/** `v` when it is a non-empty string, else null. */
function nonEmpty(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Nodes of one store handle. */
export class ZkNodes {
  /**
   * The last read (or write) of a node record through this handle, with the tick the read was
   * sent at: update writes at its version without reading again when the read is known current
   * enough (see update).
   */
  private readonly reads = new Map<string, { data: Buffer; stat: Stat; tick: number }>();

  /**
   * `lockedBy(id)`: a contender this handle holds on node `id`'s lock, with the tick it was taken
   * at; `lockGone(id)`: the node was deleted with its lock, so no contender of it is held any more.
   */
  constructor(private readonly ctx: ZkContext, private readonly lockedBy: (id: string) => { path: string; tick: number } | undefined,
    private readonly lockGone: (id: string) => void = () => undefined) {}

  async create(input: NewNode): Promise<NodeRecord> {
    checkNodeState(input.state, `creating a node on ${input.provider}`);
    checkStringList(input.labels, `creating a node on ${input.provider}: labels`);
    const client = this.ctx.main();
    let made: NodeRecord | undefined;
    const { cache, layout } = this.ctx;
    // Nodes written without our counter (Nodepool's own) are never taken again; empty lock parents may be.
    const highest = maxSeq(cache.children(layout.nodes).filter((id) => (cache.get(`${layout.nodes}/${id}`)?.data?.length ?? 0) > 0));
    await this.ctx.sequences.next('node', `creating a node on ${input.provider}`, async (next) => {
      let v = Math.max(next, highest + 1);
      for (;;) {
        const now = this.ctx.clock();
        const id = seq10(v);
        const fields: Partial<NodeRecord> = {};
        for (const [k, val] of Object.entries(input)) if (val !== undefined) (fields as Record<string, unknown>)[k] = val;
        made = structuredClone({ ...NODE_DEFAULTS, ...fields, id, stateTime: now, created: now } as NodeRecord);
        const path = this.ctx.layout.node(id);
        const data = encode(nodeJson(made), `node ${id}`);
        // An empty znode here is the parent of a lock taken before the node existed: fill it in.
        const existing = cache.get(path) ? await client.getData(path) : undefined;
        // The node's lock directory is made with it (kazoo's lock recipe makes it when missing,
        // so it is harmless): the first lock of a new node is then two requests in one round
        // trip like any other, instead of failing on the missing directory and making it.
        // The watching cache keeps what we wrote (no read back: a node record uses no stat).
        if (!existing) return { value: v, ops: [{ op: 'create', path, data, known: true }, { op: 'create', path: `${path}/${LOCK_DIR}` }] satisfies Op[] };
        if (existing.data.length === 0) return { value: v, ops: [{ op: 'set', path, data, version: existing.stat.version }] satisfies Op[] };
        v += 1;
      }
    });
    if (!made) throw new StoreError(`creating a node on ${input.provider}: lost track of the id taken`);
    return made;
  }

  async get(id: string): Promise<NodeRecord | undefined> {
    let path: string;
    try {
      path = this.ctx.layout.node(id);
    } catch {
      return undefined;
    }
    const tick = this.ctx.tick();
    const got = await this.ctx.main().getData(path);
    if (!got || got.data.length === 0) {
      this.reads.delete(path);
      return undefined;
    }
    this.keep(path, got.data, got.stat, tick);
    return nodeFromJson(id, decodeRecord(got.data, 'node', id));
  }

  private keep(path: string, data: Buffer, stat: Stat, tick: number): void {
    if (this.reads.size >= MAX_READS_KEPT && !this.reads.has(path)) this.reads.clear();
    this.reads.set(path, { data, stat, tick });
  }

  /**
   * The read of `path` update may write at, with the guard that makes that safe: a read sent
   * while this handle held the node's lock (sent after the lock was taken), and a check that
   * our lock contender still exists, in the same transaction as the write. A node's path can
   * come back after the node was removed (as the empty parent of a lock), which a version
   * check alone cannot tell apart; but the node cannot be removed without removing our
   * contender below it, so while the contender exists the znode is the one read.
   */
  private guardedRead(id: string, path: string): { cached: { data: Buffer; stat: Stat }; guard: Op[]; tick: number } | undefined {
    const read = this.reads.get(path);
    if (!read) return undefined;
    this.reads.delete(path);
    const lock = this.lockedBy(id);
    if (!lock || read.tick <= lock.tick) return undefined;
    return { cached: read, guard: [{ op: 'check', path: lock.path, version: -1 }], tick: read.tick };
  }

  /** From the cache, by id. */
  async list(filter: NodeFilter = {}): Promise<NodeRecord[]> {
    await this.ctx.fresh();
    if (filter.states?.length === 0) return [];
    const { layout, cache } = this.ctx;
    const out: NodeRecord[] = [];
    for (const { name: id, entry } of cache.childEntries(layout.nodes)) {
      const data = entry.data;
      if (!data || data.length === 0) continue;
      const rec = memoized(entry, this.ctx.corrupt, () => nodeFromJson(id, decodeRecord(data, 'node', id)));
      if (!rec) continue;
      if (filter.provider !== undefined && rec.provider !== filter.provider) continue;
      if (filter.pool !== undefined && rec.pool !== filter.pool) continue;
      if (filter.allocatedTo !== undefined && rec.allocatedTo !== filter.allocatedTo) continue;
      if (filter.states && !filter.states.includes(rec.state)) continue;
      if (filter.label !== undefined && !rec.labels.includes(filter.label)) continue;
      out.push(copyNode(rec));
    }
    return out;
  }

  /** From the cache (call ctx.fresh() first): the corrupt nodes, by id. */
  corrupt(): CorruptRecord[] {
    const out: CorruptRecord[] = [];
    for (const { name: id, entry } of this.ctx.cache.childEntries(this.ctx.layout.nodes)) {
      const data = entry.data;
      if (!data || data.length === 0) continue;
      memoized(entry, this.ctx.corrupt, () => nodeFromJson(id, decodeRecord(data, 'node', id)));
      const c = corruptEntry(entry);
      if (c) out.push(c);
    }
    return out;
  }

  /**
   * The corrupt nodes with what each still names, read leniently from its data: `external_id`
   * and `provider` when the data is a JSON object holding strings there, else null (the znode's
   * name, its node id, is always known). Leak cleanup counts these as covering
   * (CorruptStore.listCorruptNodes), as Nodepool counts any znode that exists.
   */
  async corruptClaims(): Promise<NodeClaim[]> {
    await this.ctx.fresh();
    const out: NodeClaim[] = [];
    for (const { name: id, entry } of this.ctx.cache.childEntries(this.ctx.layout.nodes)) {
      const data = entry.data;
      if (!data || data.length === 0) continue;
      memoized(entry, this.ctx.corrupt, () => nodeFromJson(id, decodeRecord(data, 'node', id)));
      if (!corruptEntry(entry)) continue;
      const j = lenientObject(data);
      out.push({ id, externalId: nonEmpty(j?.external_id), provider: typeof j?.provider === 'string' ? j.provider : null });
    }
    return out;
  }

  async update(id: string, patch: NodePatch, opts: ExpectState<NodeState> = {}): Promise<NodeRecord | undefined> {
    const what = `node ${id}`;
    if (patch.state !== undefined) checkNodeState(patch.state, `updating ${what}`);
    if (patch.labels !== undefined) checkStringList(patch.labels, `updating ${what}: labels`);
    let path: string;
    try {
      path = this.ctx.layout.node(id);
    } catch {
      return undefined;
    }
    const now = this.ctx.clock();
    const first = this.guardedRead(id, path);
    const done = await updateJson(this.ctx.main(), path, what, (cur) => {
      if (Object.keys(cur).length === 0) return null;
      const rec = nodeFromJson(id, cur);
      const expect = opts.expectStates;
      if (expect && !expect.includes(rec.state)) {
        throw new StateConflictError(id, rec.state, `node ${id} is ${rec.state}, expected ${expect.join(' or ') || 'no state at all'}`);
      }
      const next: NodeRecord = { ...rec };
      for (const [k, v] of Object.entries(patch)) {
        if (v === undefined || k === 'state') continue;
        (next as unknown as Record<string, unknown>)[k] = structuredClone(v);
      }
      if (patch.state !== undefined && patch.state !== rec.state) { next.state = patch.state; next.stateTime = now; }
      return { ...cur, ...nodeJson(next) };
    }, first?.cached, first?.guard);
    if (!done || Object.keys(done.json).length === 0) return undefined;
    // What we wrote under the same lock is as good as the read it was based on.
    if (first) this.keep(path, encode(done.json, what), done.stat, first.tick);
    return nodeFromJson(id, done.json);
  }

  /**
   * As NodeStore.deleteNodeIfIdle, at the version the watched cache holds for `seen` (no read,
   * no lock: one round trip): the lock directory and the node go in one transaction. A
   * contender below the directory fails it with NOT_EMPTY (locked), a write since with
   * BAD_VERSION (changed). A node whose lock directory is missing goes alone, and a directory
   * made meanwhile fails that with NOT_EMPTY. A cache behind the server only means a refusal.
   */
  async deleteIfIdle(seen: NodeRecord): Promise<IdleDelete> {
    let path: string;
    try {
      path = this.ctx.layout.node(seen.id);
    } catch {
      return 'gone';
    }
    const client = this.ctx.main();
    // The cache's copy when it is the one seen (the deleter's list came from it), else a read.
    const entry = this.ctx.cache.get(path);
    const data = entry?.data;
    const cached = entry?.stat && data && data.length > 0
      ? memoized(entry, this.ctx.corrupt, () => nodeFromJson(seen.id, decodeRecord(data, 'node', seen.id)))
      : undefined;
    let version = cached && isDeepStrictEqual(cached, seen) ? entry?.stat?.version : undefined;
    if (version === undefined) {
      const got = await client.getData(path);
      if (!got || got.data.length === 0) return 'gone';
      if (!isDeepStrictEqual(nodeFromJson(seen.id, decodeRecord(got.data, 'node', seen.id)), seen)) return 'changed';
      version = got.stat.version;
    }
    const lockDir = `${path}/${LOCK_DIR}`;
    const node: Op = { op: 'remove', path, version };
    for (const ops of [[{ op: 'remove', path: lockDir, version: -1 }, node], [node]] satisfies Op[][]) {
      try {
        await client.multi(ops, `deleting node ${seen.id}`);
        this.reads.delete(path);
        this.lockGone(seen.id);
        return 'deleted';
      } catch (err) {
        if (!(err instanceof ZooKeeperError)) throw err;
        if (err.code === 'NO_NODE' && err.path === lockDir) continue;
        if (err.code === 'NO_NODE') return 'gone';
        if (err.code === 'NOT_EMPTY') return 'locked';
        if (err.code === 'BAD_VERSION') return 'changed';
        // Lost mid-transaction: it applied if the node is gone now.
        if (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT') return await client.exists(path) ? 'changed' : 'deleted';
        throw err;
      }
    }
    return 'changed';
  }

  /**
   * Removes the node with its lock (whoever holds it). When this handle holds the node's lock
   * and read the record under it (the deleter does), the tree is known without reading it: our
   * contender, the lock directory and the node go in one transaction (one round trip). Anything
   * else there (a contender of someone else, a child nobody expected) fails it with NOT_EMPTY,
   * and the tree is read and removed as a whole.
   */
  async delete(id: string): Promise<boolean> {
    let path: string;
    try {
      path = this.ctx.layout.node(id);
    } catch {
      return false;
    }
    const client = this.ctx.main();
    const read = this.reads.get(path);
    this.reads.delete(path);
    if (read && await this.deleteKnown(id, path, read.tick)) {
      this.lockGone(id);
      return true;
    }
    const got = await client.getData(path);
    if (!got || got.data.length === 0) return false;
    const removed = await removeTree(client, path, `deleting node ${id}`);
    if (removed) this.lockGone(id);
    return removed;
  }

  /**
   * The one-transaction delete of {@link delete}, for a record read (with data) at `readTick`;
   * false when it does not apply or did not remove the node. The read was sent after our lock
   * was taken, so the record existed then; removing our contender in the same transaction
   * proves the znode was not removed (and made again as an empty lock parent) since.
   */
  private async deleteKnown(id: string, path: string, readTick: number): Promise<boolean> {
    const lock = this.lockedBy(id);
    const lockDir = `${path}/${LOCK_DIR}`;
    if (!lock || readTick <= lock.tick || !lock.path.startsWith(`${lockDir}/`)) return false;
    const client = this.ctx.main();
    const ops: Op[] = [{ op: 'remove', path: lock.path, version: -1 }, { op: 'remove', path: lockDir, version: -1 }, { op: 'remove', path, version: -1 }];
    try {
      await client.multi(ops, `deleting node ${id}`);
      return true;
    } catch (err) {
      if (err instanceof ZooKeeperError && (err.code === 'NOT_EMPTY' || err.code === 'NO_NODE')) return false;
      if (err instanceof ZooKeeperError && (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT')) {
        // Lost mid-transaction: it applied if the node is gone now.
        return !await client.exists(path);
      }
      throw err;
    }
  }
}
