/**
 * A watched copy of parts of the ZooKeeper tree, so list calls (planner passes, pool workers)
 * read memory instead of ZooKeeper. Each root carries one persistent recursive watch
 * (ZooKeeper 3.6's addWatch, as Nodepool's and Zuul's own tree caches use): a create is read
 * once, a data change is read once, a delete costs nothing, and an unchanged tree costs no reads
 * at all. This client's own data writes cost nothing either: the reply to a write tells what
 * the znode now holds, and the change event that comes just before it is not read back.
 *
 * Order is what makes that exact: one connection delivers watch events and replies in the order
 * ZooKeeper applied the changes, and the client library calls back from its socket handler in
 * that order. So when our write's reply comes, every event before it is of a change at or before
 * ours, and the written copy is current; an event that came while our write was on its way is
 * held until the reply (read then only if the write failed).
 *
 * After a reconnect (same session) the client adds the watches again and the cache reads
 * everything it holds once more (events of the time in between are lost); after the session
 * expired the owner calls {@link TreeCache.rebind} and everything is read afresh.
 *
 * Freshness: once a write through the same client returned, the copy shows it (or {@link
 * TreeCache.barrier} waits for the reads that its events started). Writes through another
 * client are followed by {@link TreeCache.sync}: one round trip on this client first.
 */
import { backoffMs, type BackoffPolicy } from '../../backoff.js';
import { ZooKeeperError } from '../../errors.js';
import type { WatchEvent } from './persistent-watch.js';
import type { WriteObserver, ZkClient } from './zk-client.js';
import { EVENT, type Stat } from './zk-library.js';

/** What the cache keeps of one path. */
export interface Shape {
  data: boolean;
  children: boolean;
  /** Children to keep (default all). */
  accept?: (name: string) => boolean;
}

/** One cached node. */
export interface Entry {
  data?: Buffer;
  stat?: Stat;
  children?: Set<string>;
  /** The children sorted, with their entries (built on demand, dropped when `children` changes). */
  listed?: ReadonlyArray<{ name: string; entry: Entry }>;
  /** Whatever the reader derived from `data` (dropped when the data changes). */
  memo?: unknown;
}

/** Delays before retrying a failed read (the client is reconnecting): 50 ms doubling, at most 2 s. */
const READ_RETRY: BackoffPolicy = { initialMs: 50, maxMs: 2000 };

/** Whether `a` was written after `b` (by their mzxid: ZooKeeper's transaction order). */
function newer(a: Stat, b: Stat | undefined): boolean {
  return !b || Buffer.compare(a.mzxid as unknown as Buffer, b.mzxid as unknown as Buffer) > 0;
}

export class TreeCache {
  private readonly entries = new Map<string, Entry>();
  /** Outstanding reads per ticket; a read started by another read inherits its ticket. */
  private readonly outstanding = new Map<number, number>();
  private waiters: Array<{ upTo: number; resolve: () => void }> = [];
  private lastTicket = 0;
  private closed = false;
  /** Goes up with every change of the copy (for indexes derived from it). */
  version = 0;
  private generation = 0;
  /** This client's data writes on their way, per path. */
  private readonly writing = new Map<string, number>();
  /** Change events held until our write to the same path is answered: its ticket's end. */
  private readonly held = new Map<string, { ticket: number; release: () => void }>();

  constructor(
    private client: ZkClient,
    private readonly roots: readonly string[],
    private readonly shape: (path: string) => Shape | undefined,
    private readonly notify: () => void,
    private readonly barrierTimeoutMs: number,
  ) {}

  private onChange(): void {
    this.version += 1;
    this.notify();
  }

  /**
   * Watches the roots and reads everything below them; resolves once the copy is complete.
   * Thrown: ZooKeeperError `UNIMPLEMENTED` from a ZooKeeper older than 3.6.
   */
  async start(): Promise<void> {
    const client = this.client;
    client.observeWrites(this.writes);
    client.on('connected', this.reread);
    const ticket = ++this.lastTicket;
    // The watches go out before the reads, on the same connection: the reads see them in place.
    // A watch lost with the connection is added again by the client when it reconnects (and the
    // copy is read again then), so only a refusal (an old server) fails the start.
    const watching = this.roots.map((root) => client.addWatch(root, this.onEvent).catch((err: unknown) => {
      if (err instanceof ZooKeeperError && (err.code === 'CONNECTION_LOSS' || err.code === 'OPERATION_TIMEOUT')) return;
      throw err;
    }));
    for (const root of this.roots) {
      this.entries.set(root, {});
      this.load(root, ticket, this.generation);
    }
    await Promise.all(watching);
    await this.barrier();
  }

  /** Drops everything and reads it again through `client` (the old session expired). */
  async rebind(client: ZkClient): Promise<void> {
    this.client.off('connected', this.reread);
    this.client.observeWrites(undefined);
    this.client = client;
    this.generation += 1;
    this.entries.clear();
    this.outstanding.clear();
    this.writing.clear();
    for (const h of this.held.values()) h.release();
    this.held.clear();
    this.onChange();
    await this.start();
  }

  /** The cached node at `path`. */
  get(path: string): Entry | undefined {
    return this.entries.get(path);
  }

  /** Cached children of `path`, sorted. */
  children(path: string): string[] {
    return this.childEntries(path).map((c) => c.name);
  }

  /**
   * Cached children of `path`, sorted, each with its entry: kept between calls until a child
   * comes or goes (a pool worker lists the requests at every pass, and a burst has thousands).
   */
  childEntries(path: string): ReadonlyArray<{ name: string; entry: Entry }> {
    const e = this.entries.get(path);
    if (!e?.children) return [];
    if (!e.listed) {
      const listed: Array<{ name: string; entry: Entry }> = [];
      for (const name of [...e.children].sort()) {
        const entry = this.entries.get(`${path}/${name}`);
        if (entry) listed.push({ name, entry });
      }
      e.listed = listed;
    }
    return e.listed;
  }

  /**
   * Resolves once every read started so far (and the reads they started) has finished.
   * Thrown: ZooKeeperError `OPERATION_TIMEOUT` when that takes longer than the barrier timeout
   * (ZooKeeper unreachable: the copy may be stale, so the caller must not act on it).
   */
  barrier(): Promise<void> {
    const upTo = this.lastTicket;
    if (this.settledUpTo(upTo)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new ZooKeeperError('OPERATION_TIMEOUT', `the ZooKeeper cache could not catch up within ${this.barrierTimeoutMs} ms (is ZooKeeper reachable?)`));
      }, this.barrierTimeoutMs);
      const waiter = { upTo, resolve: () => { clearTimeout(timer); resolve(); } };
      this.waiters.push(waiter);
    });
  }

  /** Makes the events of writes done through another client visible, then waits as {@link barrier}. */
  async sync(): Promise<void> {
    await this.client.exists(this.roots[0] as string);
    await this.barrier();
  }

  /** Stops reading and retrying. */
  close(): void {
    this.closed = true;
    this.client.off('connected', this.reread);
    for (const h of this.held.values()) h.release();
    this.held.clear();
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  private readonly onEvent = (ev: WatchEvent): void => {
    if (this.closed) return;
    if (ev.type === EVENT.deleted) this.remove(ev.path);
    else if (ev.type === EVENT.created) this.created(ev.path);
    else if (ev.type === EVENT.dataChanged) this.changed(ev.path);
  };

  /**
   * A znode appeared: kept when its parent is kept and lists it (lock contenders are not); read,
   * unless it is our own create of known data on its way (its reply tells, as for a write).
   */
  private created(path: string): void {
    const gen = this.generation;
    if (this.roots.includes(path)) {
      this.load(path, ++this.lastTicket, gen);
      return;
    }
    const slash = path.lastIndexOf('/');
    const parent = path.slice(0, slash);
    const name = path.slice(slash + 1);
    const pe = this.entries.get(parent);
    const ps = this.shape(parent);
    // A parent whose listing is still on its way: the listing includes this child.
    if (!pe?.children || !ps?.children || (ps.accept && !ps.accept(name)) || pe.children.has(name)) return;
    pe.children.add(name);
    pe.listed = undefined;
    this.entries.set(path, {});
    const ticket = ++this.lastTicket;
    // Our own create of a record whose data we know (Op `known`): its reply fills the entry in.
    if (this.writing.has(path) && !this.held.has(path) && !this.shape(path)?.children) {
      this.track(ticket, new Promise<void>((release) => this.held.set(path, { ticket, release })));
    } else {
      this.load(path, ticket, gen);
    }
    this.onChange();
  }

  /** A kept znode's data changed: read it, unless our own write to it is on its way (its reply tells). */
  private changed(path: string): void {
    if (!this.entries.has(path) || !this.shape(path)?.data) return;
    const ticket = ++this.lastTicket;
    if (this.writing.has(path)) {
      if (!this.held.has(path)) this.track(ticket, new Promise<void>((release) => this.held.set(path, { ticket, release })));
      return;
    }
    this.fetchData(path, ticket, this.generation);
  }

  /** Our writes: the reply's copy goes into the cache; held events are read only after a failed write. */
  private readonly writes: WriteObserver = {
    sent: (path) => {
      this.writing.set(path, (this.writing.get(path) ?? 0) + 1);
    },
    done: (path, written) => {
      const left = (this.writing.get(path) ?? 1) - 1;
      if (left > 0) this.writing.set(path, left);
      else this.writing.delete(path);
      const e = this.entries.get(path);
      if (written && e && this.shape(path)?.data) this.apply(e, written.data, written.stat);
      const h = this.held.get(path);
      if (!h) return;
      if (written) {
        // Every event before this reply is of a change at or before our write: the copy is current.
        this.held.delete(path);
        h.release();
      } else if (left <= 0) {
        this.held.delete(path);
        this.fetchData(path, h.ticket, this.generation);
        h.release();
      }
    },
  };

  /** After a reconnect (same session, watches added again): everything kept is read again. */
  private readonly reread = (): void => {
    if (this.closed) return;
    const ticket = ++this.lastTicket;
    const gen = this.generation;
    for (const path of [...this.entries.keys()]) {
      if (this.entries.has(path)) this.load(path, ticket, gen);
    }
  };

  private apply(e: Entry, data: Buffer, stat: Stat): void {
    if (!newer(stat, e.stat)) return;
    e.data = data;
    e.stat = stat;
    e.memo = undefined;
    this.onChange();
  }

  private load(path: string, ticket: number, gen: number): void {
    const s = this.shape(path);
    if (s?.data) this.fetchData(path, ticket, gen);
    if (s?.children) this.fetchChildren(path, ticket, gen);
  }

  // Reads are applied from the reply callback (inOrder), in wire order with the watch events:
  // an event that came behind a reply is then handled after it, never before.
  private fetchData(path: string, ticket: number, gen: number, attempt = 0): void {
    this.track(ticket, this.client.getData(path, (got) => {
      const e = this.entries.get(path);
      if (gen !== this.generation || !e) return;
      if (!got) { this.remove(path); return; }
      this.apply(e, got.data, got.stat);
    }).catch(() => this.retry(() => this.fetchData(path, ticket, gen, attempt + 1), ticket, gen, attempt)));
  }

  private fetchChildren(path: string, ticket: number, gen: number, attempt = 0): void {
    this.track(ticket, this.client.getChildren(path, (names) => {
      const e = this.entries.get(path);
      if (gen !== this.generation || !e) return;
      if (!names) {
        // A root that does not exist (yet): its watch reports its creation.
        if (this.roots.includes(path)) {
          this.removeBelow(path);
          e.children = new Set();
          e.listed = undefined;
          this.onChange();
        } else {
          this.remove(path);
        }
        return;
      }
      const accept = this.shape(path)?.accept;
      const kept = new Set(accept ? names.filter(accept) : names);
      const before = e.children ?? new Set<string>();
      for (const name of before) if (!kept.has(name)) this.remove(`${path}/${name}`);
      e.children = kept;
      e.listed = undefined;
      for (const name of kept) {
        if (before.has(name)) continue;
        const child = `${path}/${name}`;
        this.entries.set(child, {});
        this.load(child, ticket, gen);
      }
      this.onChange();
    }).catch(() => this.retry(() => this.fetchChildren(path, ticket, gen, attempt + 1), ticket, gen, attempt)));
  }

  /** Retries a failed read later (connection loss: the client is reconnecting), under the same ticket. */
  private retry(again: () => void, ticket: number, gen: number, attempt: number): void {
    if (this.closed || gen !== this.generation) return;
    const held = new Promise<void>((resolve) => {
      setTimeout(() => {
        if (!this.closed && gen === this.generation) again();
        resolve();
      }, backoffMs(attempt, READ_RETRY)).unref();
    });
    this.track(ticket, held);
  }

  private track(ticket: number, p: Promise<unknown>): void {
    this.outstanding.set(ticket, (this.outstanding.get(ticket) ?? 0) + 1);
    void p.finally(() => {
      const left = (this.outstanding.get(ticket) ?? 1) - 1;
      if (left > 0) this.outstanding.set(ticket, left);
      else this.outstanding.delete(ticket);
      if (left <= 0) this.wake();
    });
  }

  private settledUpTo(upTo: number): boolean {
    for (const t of this.outstanding.keys()) if (t <= upTo) return false;
    return true;
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (this.settledUpTo(w.upTo)) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  private remove(path: string): void {
    if (!this.entries.has(path)) return;
    if (this.roots.includes(path)) {
      this.removeBelow(path);
      const e = this.entries.get(path) as Entry;
      e.children = new Set();
      e.listed = undefined;
      this.onChange();
      return;
    }
    this.removeBelow(path);
    this.entries.delete(path);
    const slash = path.lastIndexOf('/');
    const parent = this.entries.get(path.slice(0, slash));
    if (parent?.children?.delete(path.slice(slash + 1))) parent.listed = undefined;
    this.onChange();
  }

  private removeBelow(path: string): void {
    const e = this.entries.get(path);
    for (const name of e?.children ?? []) {
      const child = `${path}/${name}`;
      this.removeBelow(child);
      this.entries.delete(child);
    }
  }
}
