/**
 * Ordering of a static provider's store writes within one process: a full sync runs alone
 * (it counts every host's records, then writes), while slot refills (nodeDeleted) run
 * concurrently across hosts but one at a time per host, so two refills never both see a
 * free slot.
 */
export class SyncGate {
  private exclusive: Promise<void> | undefined;
  private readonly shared = new Set<Promise<unknown>>();
  private readonly hostTails = new Map<string, Promise<unknown>>();

  /** Runs `fn` once no other exclusive or per-host work is running, and blocks new work meanwhile. */
  async exclusively<T>(fn: () => Promise<T>): Promise<T> {
    while (this.exclusive) await this.exclusive;
    let release!: () => void;
    this.exclusive = new Promise((resolve) => { release = resolve; });
    try {
      await Promise.allSettled([...this.shared]);
      return await fn();
    } finally {
      this.exclusive = undefined;
      release();
    }
  }

  /** Runs `fn` after earlier work for the same host and outside any exclusive run. */
  async forHost<T>(hostId: string, fn: () => Promise<T>): Promise<T> {
    while (this.exclusive) await this.exclusive;
    const prev = this.hostTails.get(hostId) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.hostTails.set(hostId, tail);
    this.shared.add(tail);
    try {
      return await run;
    } finally {
      this.shared.delete(tail);
      if (this.hostTails.get(hostId) === tail) this.hostTails.delete(hostId);
    }
  }
}
