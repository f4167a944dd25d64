/**
 * Node requests in ZooKeeper: `/nodepool/requests/<priority>-<seq>`, made with ZooKeeper's
 * sequential flag exactly as Zuul makes them (so ids interleave with Zuul's), ephemeral when
 * the request belongs to a store session (created through that session's own connection,
 * so it goes when the session ends). Locks are at `/nodepool/requests-lock/<id>`.
 *
 * ZooKeeper's sequence numbers start at 0 and count deletes too; ids are unique and increase,
 * which is all the contract promises.
 */
import { StateConflictError, StoreError, ZooKeeperError } from '../../errors.js';
import type { CorruptRecord } from '../corrupt.js';
import type { NewNodeRequest, NodeRequestPatch, NodeRequestRecord, RequestState } from '../models.js';
import { checkStringList } from '../checks.js';
import { checkRequestState } from '../checks.js';
import type { ExpectState, RequestFilter } from '../store.js';
import { corruptEntry, memoized } from './checked.js';
import { removeTree, removeTreeOps, updateJson, type ZkContext } from './context.js';
import { REQUEST_ID_RE } from './layout.js';
import { newEventId } from '../request-defaults.js';
import { copyRequest, newRequestJson, requestFromJson, requestJson } from './node-records.js';
import { decodeRecord, encode, ownerOf, type Json } from './records.js';
import type { Entry } from './tree-cache.js';
import type { ZkClient } from './zk-client.js';
import { MODE, type Op, type Stat } from './zk-library.js';

/** Priority of a request that names none. */
export const DEFAULT_REQUEST_PRIORITY = 100;

/** Copies of requests {@link ZkRequests.update} may write at (bounded; cleared when full). */
const MAX_KEPT = 5000;

/** Node requests of one store handle. */
export class ZkRequests {
  /**
   * The last copy of each request this handle read or wrote; update writes at the newer of it
   * and the watched cache's copy (the cache may not have seen our own last write yet).
   */
  private readonly known = new Map<string, { data: Buffer; stat: Stat }>();

  /** `sessionClient(id)` is the live client of a store session opened through this handle. */
  constructor(private readonly ctx: ZkContext, private readonly sessionClient: (id: string, what: string) => ZkClient) {}

  /**
   * Thrown: StoreError for a priority outside 0..999, for a requestor session that is not open
   * and live in this handle, and when the connection was lost during the create (whether the
   * request was made is then unknown: ZooKeeper names sequential nodes itself).
   */
  async create(input: NewNodeRequest): Promise<NodeRequestRecord> {
    const what = `creating a node request for ${input.requestor}`;
    const priority = input.priority ?? DEFAULT_REQUEST_PRIORITY;
    if (!Number.isInteger(priority) || priority < 0 || priority > 999) {
      throw new StoreError(`${what}: priority must be an integer from 0 to 999, got ${String(priority)}`);
    }
    checkStringList(input.labels, `${what}: labels`);
    const session = input.requestorSession ?? null;
    const client = session === null ? this.ctx.main() : this.sessionClient(session, what);
    const now = this.ctx.clock();
    const rec: NodeRequestRecord = {
      id: '', priority, state: 'requested', stateTime: now, created: now, labels: [...input.labels], requestor: input.requestor,
      reuse: input.reuse !== false, provider: input.provider ?? null, declinedBy: [], nodes: [], reason: null, requestorSession: session,
      tenantName: input.tenantName ?? null, relativePriority: 0, eventId: newEventId(),
    };
    let path: string;
    try {
      path = await client.create(`${this.ctx.layout.requests}/${String(priority).padStart(3, '0')}-`, encode(newRequestJson(rec), what),
        session === null ? MODE.persistentSequential : MODE.ephemeralSequential);
    } catch (err) {
      if (err instanceof ZooKeeperError && (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT')) {
        throw new StoreError(`${what}: the connection to ZooKeeper was lost while the request was being created; it may exist (${err.message})`, { cause: err });
      }
      throw err;
    }
    if (session !== null) this.ctx.wroteElsewhere();
    rec.id = path.slice(path.lastIndexOf('/') + 1);
    return rec;
  }

  async get(id: string): Promise<NodeRequestRecord | undefined> {
    const m = REQUEST_ID_RE.exec(id);
    if (!m) return undefined;
    const path = this.ctx.layout.request(id);
    const got = await this.ctx.main().getData(path);
    if (!got) {
      this.known.delete(path);
      return undefined;
    }
    this.keep(path, got.data, got.stat);
    return requestFromJson(id, Number(m[1]), ownerOf(got.stat.ephemeralOwner), decodeRecord(got.data, 'request', id));
  }

  /** From the cache, by id (priority, then age). */
  async list(filter: RequestFilter = {}): Promise<NodeRequestRecord[]> {
    await this.ctx.fresh();
    if (filter.states?.length === 0) return [];
    const { layout, cache } = this.ctx;
    const out: NodeRequestRecord[] = [];
    for (const { name: id, entry } of cache.childEntries(layout.requests)) {
      const rec = this.memo(id, entry);
      if (!rec) continue;
      if (filter.states && !filter.states.includes(rec.state)) continue;
      if (filter.requestor !== undefined && rec.requestor !== filter.requestor) continue;
      out.push(copyRequest(rec));
    }
    return out;
  }

  /** From the cache (call ctx.fresh() first): the corrupt requests, by id. */
  corrupt(): CorruptRecord[] {
    const out: CorruptRecord[] = [];
    for (const { name: id, entry } of this.ctx.cache.childEntries(this.ctx.layout.requests)) {
      this.memo(id, entry);
      const c = corruptEntry(entry);
      if (c) out.push(c);
    }
    return out;
  }

  /** The record of a cached request, parsed once per data version; undefined when corrupt or not a request. */
  private memo(id: string, entry: Entry): NodeRequestRecord | undefined {
    const { data, stat } = entry;
    const m = REQUEST_ID_RE.exec(id);
    if (!data || !stat || !m) return undefined;
    return memoized(entry, this.ctx.corrupt, () => requestFromJson(id, Number(m[1]), ownerOf(stat.ephemeralOwner), decodeRecord(data, 'request', id)));
  }

  async update(id: string, patch: NodeRequestPatch, opts: ExpectState<RequestState> = {}): Promise<NodeRequestRecord | undefined> {
    const m = REQUEST_ID_RE.exec(id);
    if (!m) return undefined;
    const what = `node request ${id}`;
    if (patch.state !== undefined) checkRequestState(patch.state, `updating ${what}`);
    if (patch.declinedBy !== undefined) checkStringList(patch.declinedBy, `updating ${what}: declinedBy`);
    if (patch.nodes !== undefined) checkStringList(patch.nodes, `updating ${what}: nodes`);
    const now = this.ctx.clock();
    let owner: string | null = null;
    const path = this.ctx.layout.request(id);
    // Request ids are never reused (sequential under a parent never removed): the cached copy may be tried first.
    const done = await updateJson(this.ctx.main(), path, what, (cur, stat) => {
      owner = ownerOf(stat.ephemeralOwner);
      const rec = requestFromJson(id, Number(m[1]), owner, cur);
      const expect = opts.expectStates;
      if (expect && !expect.includes(rec.state)) {
        throw new StateConflictError(id, rec.state, `node request ${id} is ${rec.state}, expected ${expect.join(' or ') || 'no state at all'}`);
      }
      const next = { ...rec };
      if (patch.state !== undefined && patch.state !== rec.state) { next.state = patch.state; next.stateTime = now; }
      if (patch.declinedBy !== undefined) next.declinedBy = [...patch.declinedBy];
      if (patch.nodes !== undefined) next.nodes = [...patch.nodes];
      if (patch.reason !== undefined) next.reason = patch.reason;
      return keepCreatedTime(cur, { ...cur, ...requestJson(next) });
    }, this.newest(path));
    if (!done) {
      this.known.delete(path);
      return undefined;
    }
    this.keep(path, encode(done.json, what), done.stat);
    return requestFromJson(id, Number(m[1]), owner, done.json);
  }

  private keep(path: string, data: Buffer, stat: Stat): void {
    if (this.known.size >= MAX_KEPT && !this.known.has(path)) this.known.clear();
    this.known.set(path, { data, stat });
  }

  /** The newer of the cache's copy and ours (by version; request paths are never reused). */
  private newest(path: string): { data?: Buffer; stat?: Stat } | undefined {
    const cached = this.ctx.cache.get(path);
    const ours = this.known.get(path);
    if (!ours) return cached;
    if (!cached?.stat || !cached.data) return ours;
    return ours.stat.version > cached.stat.version ? ours : cached;
  }

  /**
   * Removes lock directories of requests that no longer exist (an ephemeral request went with
   * its session while another session held its lock): those of `ids`, or all. Returns how many
   * of them were held.
   */
  async sweepOrphanLocks(ids?: readonly string[]): Promise<number> {
    const client = this.ctx.main();
    const { layout } = this.ctx;
    let held = 0;
    for (const id of ids ?? await client.getChildren(layout.requestsLock) ?? []) {
      if (!REQUEST_ID_RE.test(id) || await client.exists(layout.request(id))) continue;
      const lockPath = `${layout.requestsLock}/${id}`;
      const holders = await client.getChildren(lockPath);
      if (holders === undefined) continue;
      if (await removeTree(client, lockPath, `removing the lock of vanished node request ${id}`) && holders.length > 0) held += 1;
    }
    return held;
  }

  /** Removes the request and its lock (whoever holds it). */
  async delete(id: string): Promise<boolean> {
    if (!REQUEST_ID_RE.test(id)) return false;
    const client = this.ctx.main();
    const { layout } = this.ctx;
    const lockPath = `${layout.requestsLock}/${id}`;
    this.known.delete(layout.request(id));
    // Its lock directory goes with it: first tried as an empty leaf (its handler has unlocked,
    // the usual case: no listing), then read when that fails (missing, or a contender there).
    return removeTree(client, layout.request(id), `deleting node request ${id}`, async (ops, attempt) => {
      if (ops.length === 0) return ops;
      return [...attempt === 0 ? [{ op: 'remove', path: lockPath, version: -1 } satisfies Op] : await removeTreeOps(client, lockPath), ...ops];
    });
  }
}

/**
 * A request's `created_time` as its writer left it when that was absent or null (Zuul's before
 * it sets one): an update does not make one up (it used to write 0).
 */
function keepCreatedTime(cur: Json, next: Json): Json {
  if (cur.created_time === undefined) delete next.created_time;
  else if (cur.created_time === null) next.created_time = null;
  return next;
}
