/**
 * Deadlines for many items behind one timer. The client gives every job a deadline for its
 * JOB_CREATED; a setTimeout + clearTimeout per job was a measurable share of a round trip, and
 * nearly every deadline is cancelled long before it is due.
 */

/** Items with deadlines; `onExpired(item)` runs once per item whose deadline passed. */
export class Deadlines<T> {
  private readonly due = new Map<T, number>();
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (monotonic ms); Infinity when it is not armed. */
  private timerAt = Infinity;
  private readonly onTimer = (): void => this.expire();

  /** `onExpired` may call {@link delete} and {@link add}. */
  constructor(private readonly onExpired: (item: T) => void) {}

  /** Number of items with a pending deadline. */
  get size(): number {
    return this.due.size;
  }

  /** Expires `item` in `timeoutMs` unless deleted first (replaces an earlier deadline). */
  add(item: T, timeoutMs: number): void {
    const at = performance.now() + timeoutMs;
    this.due.set(item, at);
    // deadlines mostly arrive in increasing order: the armed timer then already fires first
    if (at < this.timerAt) this.arm(at);
  }

  /** Cancels the deadline of `item` (no-op when it has none). The timer stays armed: it is cheaper to let it fire once. */
  delete(item: T): void {
    this.due.delete(item);
  }

  /** Cancels every deadline and the timer. */
  clear(): void {
    this.due.clear();
    this.disarm();
  }

  private arm(at: number): void {
    this.disarm();
    this.timerAt = at;
    this.timer = setTimeout(this.onTimer, Math.max(0, Math.ceil(at - performance.now())));
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    for (const [item, at] of this.due) {
      if (at > now) continue;
      this.due.delete(item);
      this.onExpired(item);
    }
    let next = Infinity;
    for (const at of this.due.values()) if (at < next) next = at;
    if (next < this.timerAt) this.arm(next);
  }
}
