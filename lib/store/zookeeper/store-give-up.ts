/**
 * Stopping without ZooKeeper (issue 31 §11), shared by every client of one store: once
 * {@link arm}ed (the process is stopping), a client that has not reached ZooKeeper for
 * `afterMs` fails its pending calls, and every later call at once, while it stays unreachable,
 * instead of waiting out each call's deadline. What was given up is kept for the stop to log.
 */
export class StoreGiveUp {
  /** Unset until armed. */
  afterMs: number | undefined;
  /** The calls given up, first ones (at most {@link MAX_NAMED}); `count` has them all. */
  readonly given: string[] = [];
  count = 0;
  private readonly onArm = new Set<() => void>();

  static readonly MAX_NAMED = 50;

  /** From now on, give up after `afterMs` without ZooKeeper. Idempotent (the first bound stays). */
  arm(afterMs: number): void {
    if (this.afterMs !== undefined) return;
    this.afterMs = afterMs;
    for (const f of this.onArm) f();
  }

  /** Called at arm (at once when armed already); returns the unsubscription. */
  subscribe(f: () => void): () => void {
    this.onArm.add(f);
    if (this.afterMs !== undefined) f();
    return () => this.onArm.delete(f);
  }

  note(what: string): void {
    this.count += 1;
    if (this.given.length < StoreGiveUp.MAX_NAMED) this.given.push(what);
  }
}
