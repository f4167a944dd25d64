/**
 * The one capped exponential backoff of the tree (pure, like bullmq's `backoffs.ts`): every
 * retry loop (the image lifecycle's failure delay, upload attempts, Nova polls, ZooKeeper
 * reads and reconnects, Gearman reconnects, periodic loops, store writes that outlive an
 * outage) describes its delays as a {@link BackoffPolicy} and asks {@link backoffMs}.
 */

/** How the delays after consecutive failures grow. */
export interface BackoffPolicy {
  /** Delay before the first retry (attempt 0), ms. */
  initialMs: number;
  /** Growth per attempt (default 2: doubling). */
  factor?: number;
  /** Longest delay, ms (default none). */
  maxMs?: number;
  /**
   * Share of the delay that is random: 0.2 gives between 80 % and 100 % of it, rounded to
   * whole ms, so that many clients failing together do not retry together (default 0).
   */
  jitter?: number;
}

/** The exponent stops growing here: far past any cap, and short of Infinity. */
const MAX_EXPONENT = 30;

/**
 * Milliseconds to wait before retry `attempt` (0-based):
 * min(maxMs, initialMs · factor^attempt), less up to `jitter` of it at random.
 * A negative attempt counts as 0.
 */
export function backoffMs(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(0, attempt), MAX_EXPONENT);
  const delay = Math.min(policy.maxMs ?? Infinity, policy.initialMs * (policy.factor ?? 2) ** exponent);
  const jitter = policy.jitter ?? 0;
  return jitter > 0 ? Math.round(delay * (1 - jitter + jitter * random())) : delay;
}

/**
 * Counts the attempts of one retry loop: {@link next} is the delay before the next retry,
 * {@link reset} starts over after a success.
 */
export class Backoff {
  private attempt = 0;

  constructor(private readonly policy: BackoffPolicy, private readonly random: () => number = Math.random) {}

  /** Retries asked for since the last reset. */
  get attempts(): number {
    return this.attempt;
  }

  /** The delay before the next retry (and counts it). */
  next(): number {
    return backoffMs(this.attempt++, this.policy, this.random);
  }

  /** Starts over from `initialMs` (after a success). */
  reset(): void {
    this.attempt = 0;
  }
}
