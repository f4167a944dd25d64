/**
 * Nodes in ZooKeeper: `/nodepool/nodes/<10-digit id>` with Nodepool's JSON, and the node lock at
 * `…/<id>/lock`. Ids come from the counter `sequences/node` (start at 1, never reused). A lock
 * taken on a node id that has no record yet leaves an empty znode at the node's path (the lock
 * recipe needs a parent); readers skip empty znodes and a later create fills it in.
 */
import { StateConflictError, StoreError } from '../../errors.js';
import type { NewNode, NodePatch, NodeRecord, NodeState } from '../models.js';
import { checkNodeState, checkStringList } from '../sqlite/rows.js';
import type { ExpectState } from '../store.js';
import { removeTree, updateJson, type ZkContext } from './context.js';
import { maxSeq } from './builds.js';
import { seq10 } from './layout.js';
import { copyNode, decode, encode, nodeFromJson, nodeJson } from './records.js';
import type { Op } from './zk-client.js';

/** Filter of {@link ZkNodes.list}. */
export interface NodeFilter {
  provider?: string;
  pool?: string;
  label?: string;
  states?: readonly NodeState[];
  allocatedTo?: string;
}

/** What a node starts with for each field NewNode may leave out. */
const NODE_DEFAULTS: Omit<NodeRecord, 'id' | 'stateTime' | 'created' | 'state' | 'provider' | 'pool' | 'labels'> = {
  launcher: null, allocatedTo: null, hostname: null, interfaceIp: null, publicIpv4: null, publicIpv6: null,
  privateIpv4: null, connectionType: 'ssh', connectionPort: 22, username: null, hostKeys: [], externalId: null,
  cloud: null, region: null, az: null, image: null, resources: null, attributes: {}, reason: null,
  holdReason: null, holdExpiration: null, consumerSession: null, handedOff: false, validatesUpload: null,
};

/** Nodes of one store handle. */
export class ZkNodes {
  constructor(private readonly ctx: ZkContext) {}

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
        if (!existing) return { value: v, ops: [{ op: 'create', path, data }] satisfies Op[] };
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
    const got = await this.ctx.main().getData(path);
    if (!got || got.data.length === 0) return undefined;
    return nodeFromJson(id, decode(got.data, `node ${id}`));
  }

  /** From the cache, by id. */
  async list(filter: NodeFilter = {}): Promise<NodeRecord[]> {
    await this.ctx.fresh();
    if (filter.states?.length === 0) return [];
    const { layout, cache } = this.ctx;
    const out: NodeRecord[] = [];
    for (const id of cache.children(layout.nodes)) {
      const entry = cache.get(`${layout.nodes}/${id}`);
      if (!entry?.data || entry.data.length === 0) continue;
      let rec = entry.memo as NodeRecord | undefined;
      if (!rec) {
        rec = nodeFromJson(id, decode(entry.data, `node ${id}`));
        entry.memo = rec;
      }
      if (filter.provider !== undefined && rec.provider !== filter.provider) continue;
      if (filter.pool !== undefined && rec.pool !== filter.pool) continue;
      if (filter.allocatedTo !== undefined && rec.allocatedTo !== filter.allocatedTo) continue;
      if (filter.states && !filter.states.includes(rec.state)) continue;
      if (filter.label !== undefined && !rec.labels.includes(filter.label)) continue;
      out.push(copyNode(rec));
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
    });
    if (!done || Object.keys(done.json).length === 0) return undefined;
    return nodeFromJson(id, done.json);
  }

  /** Removes the node with its lock (whoever holds it). */
  async delete(id: string): Promise<boolean> {
    let path: string;
    try {
      path = this.ctx.layout.node(id);
    } catch {
      return false;
    }
    const client = this.ctx.main();
    const got = await client.getData(path);
    if (!got || got.data.length === 0) return false;
    return removeTree(client, path, `deleting node ${id}`);
  }
}
