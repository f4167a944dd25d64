/**
 * Store sessions are ZooKeeper sessions. openSession opens a client connection of its own;
 * its ZooKeeper session is the store session (id: the session id in hex) and it creates
 * everything that belongs to the session: the ephemeral `/nodepool/sessions/<id>` (owner,
 * hostname, pid), locks, launcher registrations (`/nodepool/launchers/<id>`) and ephemeral
 * node requests. When ZooKeeper expires or closes the session they all go at once, on the
 * server; nothing is left to reap. A renewal answers whether the session is still alive;
 * after a plain connection loss the client reconnects to the same session.
 */
import { StoreError, ZooKeeperError } from '../../errors.js';
import { componentVersion, DEFAULT_POOL_PRIORITY } from '../components.js';
import { checkLauncherPatch } from '../launcher-patch.js';
import { withStanding } from '../pool-standing.js';
import type { LauncherPatch, LauncherRecord, SessionRecord } from '../models.js';
import { checkStringList } from '../checks.js';
import { ZkComponents } from './components.js';
import { updateJson, type ZkContext } from './context.js';
import { corruptEntry, memoized } from './checked.js';
import type { CorruptRecord } from '../corrupt.js';
import { decode, decodeRecord, encode, launcherFromJson, launcherJson, ownerOf, sessionFromJson, sessionJson } from './records.js';
import type { Entry } from './tree-cache.js';
import type { ZkClient } from './zk-client.js';
import { MODE } from './zk-library.js';
import type { NewSession, ReapCounts } from '../store.js';

/** Sessions and launchers of one store handle. */
export class ZkSessions {
  private readonly mine = new Map<string, ZkClient>();
  /** Sessions of this handle found dead by a renewal and closed (ids only; a few per outage). */
  private readonly givenUp = new Set<string>();
  /** The hostname each session of this handle was opened with (its components carry it). */
  private readonly hostnames = new Map<string, string>();
  /** Nodepool 11's component registry, written with the sessions of this handle. */
  readonly components: ZkComponents;

  constructor(private readonly ctx: ZkContext, private readonly connect: (ttlMs: number) => Promise<ZkClient>, version = componentVersion()) {
    this.components = new ZkComponents(ctx, (id, what) => this.client(id, what), (id) => this.hostnames.get(id) ?? '', version);
  }

  async open(input: NewSession): Promise<SessionRecord> {
    if (!Number.isInteger(input.ttlMs) || input.ttlMs <= 0) {
      throw new StoreError(`opening a session for ${input.owner}: ttlMs must be a positive integer, got ${String(input.ttlMs)}`);
    }
    if (!Number.isInteger(input.pid)) throw new StoreError(`opening a session for ${input.owner}: pid must be an integer, got ${String(input.pid)}`);
    const client = await this.connect(input.ttlMs);
    const id = client.sessionId;
    const now = this.ctx.clock();
    const rec: SessionRecord = { id, owner: input.owner, hostname: input.hostname, pid: input.pid, created: now, renewed: now, ttlMs: client.sessionTimeoutMs };
    try {
      await client.create(this.ctx.layout.session(id), encode(sessionJson(rec), `session ${id}`), MODE.ephemeral);
    } catch (err) {
      await client.close();
      throw err;
    }
    this.mine.set(id, client);
    this.hostnames.set(id, input.hostname);
    this.ctx.wroteElsewhere();
    return rec;
  }

  /**
   * The client of a session opened through this handle, when it is alive.
   * Thrown: StoreError naming `what` otherwise.
   */
  client(id: string, what: string): ZkClient {
    const c = this.mine.get(id);
    if (c?.alive) return c;
    throw new StoreError(`${what}: session ${id} is not live here (lapsed, closed, never opened, or opened by another process)`);
  }

  /** When the server last answered the session's client (undefined: not a session of this handle). */
  heardAt(id: string): number | undefined {
    return this.mine.get(id)?.heardAt;
  }

  /** The raw credentials of a session opened through this handle (tests expire it with them). */
  credentials(id: string): { sessionId: Buffer; sessionPassword: Buffer } | undefined {
    return this.mine.get(id)?.credentials();
  }

  /** True while the session is alive; a session found dead is closed here for good. */
  async renew(id: string): Promise<boolean> {
    // A session given up here stays given up: after an outage its znode lingers until ZooKeeper
    // ends it (a session timeout after it is back), but no client here can use it any more.
    if (this.givenUp.has(id)) return false;
    const c = this.mine.get(id);
    if (!c) return this.isLive(id);
    if (c.alive) return true;
    this.mine.delete(id);
    this.givenUp.add(id);
    await c.close();
    this.ctx.wroteElsewhere();
    return false;
  }

  /** Closes a session of this handle: ZooKeeper deletes its ephemeral nodes. Idempotent; another process's session is left alone. */
  async close(id: string): Promise<void> {
    const c = this.mine.get(id);
    if (!c) return;
    this.mine.delete(id);
    await c.close();
    this.ctx.wroteElsewhere();
  }

  /** Closes every session of this handle. */
  async closeAll(): Promise<void> {
    const all = [...this.mine.values()];
    this.mine.clear();
    await Promise.all(all.map((c) => c.close()));
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    let path: string;
    try {
      path = this.ctx.layout.session(id);
    } catch {
      return undefined;
    }
    const got = await this.ctx.main().getData(path);
    return got ? sessionFromJson(id, this.ctx.clock(), decode(got.data, `session ${id}`)) : undefined;
  }

  /** Live sessions (a lapsed one has no znode any more), oldest first. */
  async list(): Promise<SessionRecord[]> {
    const client = this.ctx.main();
    const ids = await client.getChildren(this.ctx.layout.sessions) ?? [];
    const out: SessionRecord[] = [];
    for (const id of ids) {
      const rec = await this.get(id);
      if (rec) out.push(rec);
    }
    return out.sort((a, b) => a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async isLive(id: string): Promise<boolean> {
    const c = this.mine.get(id);
    if (c) return c.alive;
    try {
      return Boolean(await this.ctx.main().exists(this.ctx.layout.session(id)));
    } catch (err) {
      if (err instanceof ZooKeeperError) throw err;
      return false;
    }
  }

  /** Nothing to reap: ZooKeeper removed the ephemeral nodes of lapsed sessions itself. Drops this handle's dead clients. */
  async reap(): Promise<ReapCounts> {
    for (const [id, c] of [...this.mine]) {
      if (!c.alive) {
        this.mine.delete(id);
        await c.close();
      }
    }
    return { sessions: 0, locks: 0, launchers: 0, requests: 0 };
  }

  /**
   * Registers (or refreshes) a launcher as an ephemeral node of its session, and its pool
   * component; priority and paused keep their registered values when not given.
   */
  async registerLauncher(input: Omit<LauncherRecord, 'registered'>): Promise<LauncherRecord> {
    const what = `registering launcher ${input.id}`;
    const client = this.client(input.sessionId, `cannot register launcher ${input.id}`);
    checkStringList(input.supportedLabels, `${what}: supportedLabels`);
    checkLauncherPatch(input, what);
    const path = this.ctx.layout.launcher(input.id);
    for (let attempt = 1; attempt <= 10; attempt++) {
      const got = await client.getData(path);
      const before = got ? launcherBefore(input.id, got.data) : undefined;
      const rec: LauncherRecord = {
        ...input, supportedLabels: [...input.supportedLabels], registered: this.ctx.clock(),
        priority: input.priority ?? before?.priority ?? DEFAULT_POOL_PRIORITY, paused: input.paused ?? before?.paused ?? false,
        ...withStanding(input.standing ?? before?.standing),
      };
      const data = encode(launcherJson(rec), `launcher ${input.id}`);
      try {
        if (!got) {
          await client.create(path, data, MODE.ephemeral);
        } else if (ownerOf(got.stat.ephemeralOwner) === input.sessionId) {
          await client.setData(path, data, got.stat.version);
        } else {
          // Another session's registration of this id: it moves to ours.
          await client.multi([{ op: 'remove', path, version: got.stat.version }, { op: 'create', path, data, mode: MODE.ephemeral }], what);
        }
        this.ctx.wroteElsewhere();
        await this.components.registerPool(rec);
        return rec;
      } catch (err) {
        if (!(err instanceof ZooKeeperError && ['NODE_EXISTS', 'NO_NODE', 'BAD_VERSION'].includes(err.code))) throw err;
      }
    }
    throw new StoreError(`${what}: its znode kept changing`);
  }

  /** Changes a registered launcher and its pool component (not for a standing alone); undefined when it is not registered. */
  async updateLauncher(id: string, patch: LauncherPatch): Promise<LauncherRecord | undefined> {
    const what = `updating launcher ${id}`;
    checkLauncherPatch(patch, what);
    let path: string;
    try {
      path = this.ctx.layout.launcher(id);
    } catch {
      return undefined;
    }
    let rec: LauncherRecord | undefined;
    const done = await updateJson(this.ctx.main(), path, what, (cur, stat) => {
      const now = launcherFromJson(id, ownerOf(stat.ephemeralOwner) ?? '', cur);
      rec = {
        ...now, supportedLabels: [...(patch.supportedLabels ?? now.supportedLabels)],
        priority: patch.priority ?? now.priority ?? DEFAULT_POOL_PRIORITY, paused: patch.paused ?? now.paused ?? false,
        ...withStanding(patch.standing ?? now.standing),
      };
      return { ...cur, ...launcherJson(rec) };
    });
    if (!done || !rec) return undefined;
    // The pool component has Nodepool's fields only: a new standing alone does not touch it.
    if (patch.supportedLabels !== undefined || patch.priority !== undefined || patch.paused !== undefined) await this.components.updatePool(rec);
    return rec;
  }

  /** Removes the registration and its pool component (whichever session made them). */
  async unregisterLauncher(id: string): Promise<void> {
    try {
      await this.ctx.main().remove(this.ctx.layout.launcher(id));
    } catch (err) {
      if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
    }
    await this.components.removePool(id);
  }

  /** From the cache: registered launchers (their sessions are alive, or the node would be gone), by id. */
  async listLaunchers(): Promise<LauncherRecord[]> {
    await this.ctx.fresh();
    const { layout, cache } = this.ctx;
    const out: LauncherRecord[] = [];
    for (const id of cache.children(layout.launchers)) {
      const e = cache.get(`${layout.launchers}/${id}`);
      const rec = e && this.memoLauncher(id, e);
      if (rec) out.push({ ...rec, supportedLabels: [...rec.supportedLabels] });
    }
    return out;
  }

  /** From the cache (call ctx.fresh() first): corrupt launcher registrations, by id. */
  corruptLaunchers(): CorruptRecord[] {
    const { layout, cache } = this.ctx;
    const out: CorruptRecord[] = [];
    for (const id of cache.children(layout.launchers)) {
      const e = cache.get(`${layout.launchers}/${id}`);
      if (!e) continue;
      this.memoLauncher(id, e);
      const c = corruptEntry(e);
      if (c) out.push(c);
    }
    return out;
  }

  private memoLauncher(id: string, e: Entry): LauncherRecord | undefined {
    const { data, stat } = e;
    if (!data || !stat) return undefined;
    return memoized(e, this.ctx.corrupt, () => launcherFromJson(id, ownerOf(stat.ephemeralOwner) ?? '', decodeRecord(data, 'launcher', id)));
  }
}

/** A registration's priority, paused flag and standing as stored (none when its JSON does not parse). */
function launcherBefore(id: string, data: Buffer): Pick<LauncherRecord, 'priority' | 'paused' | 'standing'> | undefined {
  try {
    const l = launcherFromJson(id, '', decodeRecord(data, 'launcher', id));
    return { priority: l.priority, paused: l.paused, ...withStanding(l.standing) };
  } catch {
    return undefined;
  }
}
