/**
 * Token buckets per key (a client's address, a user), for attempts a server refuses (issue 31
 * §3): each key may make `burst` attempts at once and earns `perSecond` more each second, up to
 * `burst`. The keys held are bounded: past `maxKeys`, keys whose bucket is full again are
 * forgotten (they are as new), and while none can be, a new key is over its limit at once (a
 * storm from many addresses is refused rather than grows memory). Pure but for the clock.
 */

/** Options of {@link RateLimiter}. */
export interface RateLimiterOptions {
  /** Attempts a key may make at once. */
  burst: number;
  /** Attempts a key earns back per second. */
  perSecond: number;
  /** Keys held at once (default 10,000). */
  maxKeys?: number;
  /** Milliseconds since the epoch (default `Date.now`). */
  clock?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly clock: () => number;
  private lastSweep = -Infinity;

  constructor(private readonly opts: RateLimiterOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  /** Takes one attempt of `key`: true when within its limit, false when over it. */
  take(key: string): boolean {
    const now = this.clock();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= (this.opts.maxKeys ?? 10_000) && !this.forgetFull(now)) return false;
      b = { tokens: this.opts.burst, at: now };
      this.buckets.set(key, b);
    }
    b.tokens = this.refilled(b, now);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** Seconds until `key` may try again (at least 1). */
  retryAfterSeconds(key: string): number {
    const b = this.buckets.get(key);
    if (!b) return 1;
    const missing = 1 - this.refilled(b, this.clock());
    return Math.max(1, Math.ceil(missing / this.opts.perSecond));
  }

  /** Keys held (for tests of the bound). */
  get size(): number {
    return this.buckets.size;
  }

  private refilled(b: Bucket, now: number): number {
    return Math.min(this.opts.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * this.opts.perSecond);
  }

  /** Forgets the keys whose bucket is full again (at most one sweep a second); whether any was. */
  private forgetFull(now: number): boolean {
    if (now - this.lastSweep < 1000) return false;
    this.lastSweep = now;
    const before = this.buckets.size;
    for (const [k, b] of this.buckets) if (this.refilled(b, now) >= this.opts.burst) this.buckets.delete(k);
    return this.buckets.size < before;
  }
}
