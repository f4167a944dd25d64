/**
 * The churn benches' consumer (bench/static-churn.ts, bench/fleet.ts): follows Zuul's flow for
 * every fulfilled request of one requestor (lock the node, in-use, used, unlock, delete the
 * request) as soon as it is fulfilled, and records what the figures are made of.
 */
import { waitFor } from '../lib/lifecycle.js';
import { nodeLock } from '../lib/store/lock-names.js';
import type { NodeRecord } from '../lib/store/models.js';
import type { Store } from '../lib/store/store.js';

/** A node's host slot (the same for every record registered for it). */
export const slotKey = (n: NodeRecord): string => `${n.hostname ?? ''}:${n.connectionPort}:${n.slot ?? ''}`;

/**
 * The Zuul-style consumer: takes every fulfilled request of `requestor` (woken by the store's
 * change hints, and every 20 ms in any case), returns its node at once, and records when each
 * node was marked used and every node it was given (for the turnaround).
 */
export class ChurnConsumer {
  readonly used: Array<{ slot: string; at: number }> = [];
  readonly seen = new Map<string, NodeRecord>();
  readonly fulfilled: Array<{ created: number; at: number }> = [];
  /** Requests that failed (e.g. the launcher's store write timed out), deleted and counted. */
  failed = 0;
  private readonly taken = new Set<string>();
  private scanning: Promise<void> | undefined;
  private again = false;
  private readonly timer: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private failure: Error | undefined;

  constructor(private readonly store: Store, private readonly session: string, private readonly requestor: string) {
    this.unsubscribe = store.onChange(() => this.scan());
    this.timer = setInterval(() => this.scan(), 20);
  }

  /** Resolves when `n` requests were served and their nodes returned. Thrown: the first failure. */
  async done(n: number): Promise<void> {
    await waitFor(() => this.failure !== undefined || this.used.length + this.failed >= n, { timeoutMs: 600_000, what: `${n} requests served and returned`, intervalMs: 10 });
    if (this.failure) throw this.failure;
  }

  stop(): void {
    clearInterval(this.timer);
    this.unsubscribe();
  }

  private scan(): void {
    if (this.scanning) {
      this.again = true;
      return;
    }
    this.scanning = (async () => {
      do {
        this.again = false;
        const done = (await this.store.listRequests({ requestor: this.requestor, states: ['fulfilled', 'failed'] })).filter((r) => !this.taken.has(r.id));
        for (const r of done) this.taken.add(r.id);
        await Promise.all(done.map(async (r) => {
          if (r.state === 'failed') {
            this.failed += 1;
            await this.store.deleteRequest(r.id);
            return;
          }
          this.fulfilled.push({ created: r.created, at: r.stateTime });
          for (const id of r.nodes) await this.returnNode(id);
          await this.store.deleteRequest(r.id);
        }));
      } while (this.again);
    })().catch((err: unknown) => { this.failure ??= err instanceof Error ? err : new Error(String(err)); })
      .finally(() => { this.scanning = undefined; });
  }

  /** Zuul's flow for one node: lock, in-use (the job runs), used (the job ended), unlock. */
  private async returnNode(id: string): Promise<void> {
    const { store, session } = this;
    // The launcher unlocks the node just after marking the request fulfilled: wait for it, as
    // Zuul's blocking lock does (bounded).
    await waitFor(() => store.tryLock(nodeLock(id), session), { timeoutMs: 10_000, what: `the lock of node ${id}`, intervalMs: 2 });
    // Read under the lock (as Zuul does): the two writes below then go at its version, with no read each.
    if (!await store.getNode(id)) throw new Error(`node ${id} of a fulfilled request is gone`);
    const inUse = await store.updateNode(id, { state: 'in-use' }, { expectStates: ['ready'] });
    if (!inUse) throw new Error(`node ${id} of a fulfilled request is gone`);
    this.seen.set(id, inUse);
    const used = await store.updateNode(id, { state: 'used' }, { expectStates: ['in-use'] });
    this.used.push({ slot: slotKey(inUse), at: used?.stateTime ?? Date.now() });
    await store.unlock(nodeLock(id), session);
  }
}

/** Turnaround per return: used → the first record of the same slot created at or after it. */
export function turnarounds(used: ReadonlyArray<{ slot: string; at: number }>, nodes: Iterable<NodeRecord>): number[] {
  const created = new Map<string, number[]>();
  for (const n of nodes) created.set(slotKey(n), [...(created.get(slotKey(n)) ?? []), n.created]);
  for (const list of created.values()) list.sort((a, b) => a - b);
  return used.flatMap(({ slot, at }) => {
    const next = created.get(slot)?.find((t) => t >= at);
    return next === undefined ? [] : [next - at];
  });
}

