/**
 * IdleWaiters: callers waiting for a GearmanWorker to become idle (no job running, no grab on
 * the wire). The worker calls {@link IdleWaiters.notify} whenever idleness may have changed.
 */

/** Waits on an `isIdle` predicate, re-checked on every {@link notify}. */
export class IdleWaiters {
  private waiters: Array<() => void> = [];

  constructor(private readonly isIdle: () => boolean) {}

  /** Resolves true once idle, or false after `timeoutMs` (undefined: no limit). */
  wait(timeoutMs: number | undefined): Promise<boolean> {
    if (this.isIdle()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter = (): void => {
        if (!this.isIdle()) return;
        if (timer) clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(true);
      };
      this.waiters.push(waiter);
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          resolve(this.isIdle());
        }, timeoutMs);
      }
    });
  }

  /** Re-checks idleness for every waiter. */
  notify(): void {
    if (this.waiters.length === 0) return;
    for (const w of [...this.waiters]) w();
  }
}
