/**
 * A watched copy of parts of the ZooKeeper tree, so list calls (planner passes, pool workers)
 * read memory instead of ZooKeeper. Every cached node carries a one-shot watch (data, children
 * or both, as `shape` says); a watch that fires re-reads that one node and re-arms it, so an
 * unchanged tree costs no reads at all. After a connection loss the client re-registers the
 * watches itself (ZooKeeper then reports what changed meanwhile); after the session expired
 * the owner calls {@link TreeCache.rebind} and everything is read afresh.
 *
 * Freshness: a watch event reaches this client before the answer to a write that caused it,
 * so once a write through the same client returned, {@link TreeCache.barrier} waits for the
 * reads that event started (and the reads those started). Writes through another client are
 * followed by {@link TreeCache.sync}: one round trip on this client first.
 */
import { ZooKeeperError } from '../../errors.js';
import { EVENT, type Stat, type ZkClient } from './zk-client.js';

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
  /** Whatever the reader derived from `data` (dropped when the data changes). */
  memo?: unknown;
}

/** Longest pause between retries of a failed read. */
const MAX_RETRY_MS = 2000;

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

  /** Reads the roots and everything below them; resolves once the copy is complete. */
  async start(): Promise<void> {
    const ticket = ++this.lastTicket;
    for (const root of this.roots) {
      this.entries.set(root, {});
      this.load(root, ticket, this.generation);
    }
    await this.barrier();
  }

  /** Drops everything and reads it again through `client` (the old session expired). */
  async rebind(client: ZkClient): Promise<void> {
    this.client = client;
    this.generation += 1;
    this.entries.clear();
    this.outstanding.clear();
    this.onChange();
    await this.start();
  }

  /** The cached node at `path`. */
  get(path: string): Entry | undefined {
    return this.entries.get(path);
  }

  /** Cached children of `path`, sorted. */
  children(path: string): string[] {
    const c = this.entries.get(path)?.children;
    return c ? [...c].sort() : [];
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

  /** Stops re-arming watches and retrying reads. */
  close(): void {
    this.closed = true;
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  private readonly dataWatcher = (ev: { type: number; path: string }): void => {
    if (this.closed) return;
    const ticket = ++this.lastTicket;
    if (ev.type === EVENT.deleted) this.remove(ev.path);
    else if (ev.type === EVENT.dataChanged && this.entries.has(ev.path)) this.fetchData(ev.path, ticket, this.generation);
  };

  private readonly childWatcher = (ev: { type: number; path: string }): void => {
    if (this.closed) return;
    const ticket = ++this.lastTicket;
    if (ev.type === EVENT.deleted) this.remove(ev.path);
    else if (ev.type === EVENT.childrenChanged && this.entries.has(ev.path)) this.fetchChildren(ev.path, ticket, this.generation);
  };

  private readonly existsWatcher = (ev: { type: number; path: string }): void => {
    if (this.closed || ev.type !== EVENT.created || !this.roots.includes(ev.path)) return;
    this.entries.set(ev.path, {});
    this.load(ev.path, ++this.lastTicket, this.generation);
  };

  private load(path: string, ticket: number, gen: number): void {
    const s = this.shape(path);
    if (s?.data) this.fetchData(path, ticket, gen);
    if (s?.children) this.fetchChildren(path, ticket, gen);
  }

  private fetchData(path: string, ticket: number, gen: number, attempt = 0): void {
    this.track(ticket, this.client.getData(path, this.dataWatcher).then((got) => {
      const e = this.entries.get(path);
      if (gen !== this.generation || !e) return;
      if (!got) { this.remove(path); return; }
      e.data = got.data;
      e.stat = got.stat;
      e.memo = undefined;
      this.onChange();
    }, () => this.retry(() => this.fetchData(path, ticket, gen, attempt + 1), ticket, gen, attempt)));
  }

  private fetchChildren(path: string, ticket: number, gen: number, attempt = 0): void {
    this.track(ticket, this.client.getChildren(path, this.childWatcher).then((names) => {
      const e = this.entries.get(path);
      if (gen !== this.generation || !e) return;
      if (!names) {
        if (this.roots.includes(path)) {
          this.removeBelow(path);
          e.children = new Set();
          this.track(ticket, this.client.exists(path, this.existsWatcher).then((stat) => {
            if (stat && gen === this.generation) this.fetchChildren(path, ticket, gen);
          }, () => this.retry(() => this.fetchChildren(path, ticket, gen, attempt + 1), ticket, gen, attempt)));
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
      for (const name of kept) {
        if (before.has(name)) continue;
        const child = `${path}/${name}`;
        this.entries.set(child, {});
        this.load(child, ticket, gen);
      }
      this.onChange();
    }, () => this.retry(() => this.fetchChildren(path, ticket, gen, attempt + 1), ticket, gen, attempt)));
  }

  /** Retries a failed read later (connection loss: the client is reconnecting), under the same ticket. */
  private retry(again: () => void, ticket: number, gen: number, attempt: number): void {
    if (this.closed || gen !== this.generation) return;
    const held = new Promise<void>((resolve) => {
      setTimeout(() => {
        if (!this.closed && gen === this.generation) again();
        resolve();
      }, Math.min(MAX_RETRY_MS, 50 * 2 ** attempt)).unref();
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
      this.onChange();
      return;
    }
    this.removeBelow(path);
    this.entries.delete(path);
    const slash = path.lastIndexOf('/');
    this.entries.get(path.slice(0, slash))?.children?.delete(path.slice(slash + 1));
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
