/**
 * The circuit breaker of a provider-pool (issue 35 §3), as a pure state machine: N launch
 * failures (or API errors) in a row open it; while open the pool takes no request another pool
 * can serve; once the backoff has passed one probe launch is let through; its success closes
 * the breaker, its failure (or no answer within the probe timeout) opens it again with the
 * backoff doubled, up to a ceiling. The state is data (kept in the store so every launcher of a
 * fleet sees the same); the launcher applies these functions and writes the result.
 */

/** The breaker settings (`launcher.breaker` in the config). */
export interface BreakerSettings {
  /** Failures in a row that open the breaker. */
  failures: number;
  /** The first backoff after opening, in ms. */
  backoffMs: number;
  /** The longest backoff, in ms. */
  maxBackoffMs: number;
  /** A probe that has not ended after this long counts as failed, in ms. */
  probeTimeoutMs: number;
}

/** A breaker's state. `since` is when it opened (kept through probes until it closes). */
export type BreakerState =
  | { state: 'closed'; failures: number }
  | { state: 'open'; failures: number; since: number; until: number; backoffMs: number }
  | { state: 'probing'; failures: number; since: number; probeStarted: number; backoffMs: number };

/** A closed breaker with no failure counted. */
export const CLOSED: BreakerState = Object.freeze({ state: 'closed', failures: 0 });

/** Whether the pool may take a request now: freely, as the probe, or not. */
export type BreakerVerdict = 'take' | 'probe' | 'hold';

/**
 * `state` as of `now`: a probe that outlived the probe timeout counts as failed at the moment
 * it timed out (so every launcher settles it alike, whenever it looks).
 */
export function settleBreaker(state: BreakerState, now: number, s: BreakerSettings): BreakerState {
  const timedOutAt = state.state === 'probing' ? state.probeStarted + s.probeTimeoutMs : Infinity;
  if (state.state !== 'probing' || now < timedOutAt) return state;
  return reopen(state.failures, state.since, state.backoffMs, timedOutAt, s);
}

/** Whether a pool with breaker `state` takes a request at `now`. */
export function breakerVerdict(state: BreakerState, now: number, s: BreakerSettings): BreakerVerdict {
  const settled = settleBreaker(state, now, s);
  if (settled.state === 'closed') return 'take';
  if (settled.state === 'open' && now >= settled.until) return 'probe';
  return 'hold';
}

/** The state once the probe launch has begun at `now` (only from an open breaker whose backoff passed). */
export function startProbe(state: BreakerState, now: number, s: BreakerSettings): BreakerState {
  const settled = settleBreaker(state, now, s);
  if (settled.state !== 'open' || now < settled.until) return settled;
  return { state: 'probing', failures: settled.failures, since: settled.since, probeStarted: now, backoffMs: settled.backoffMs };
}

/**
 * The state when the probe's request started no launch (another launcher locked it first, or
 * it was served from a ready node, declined or paused): open again with its backoff over, so
 * the next request placed on the pool is the probe. Any other state is left as it is.
 */
export function abandonProbe(state: BreakerState, now: number): BreakerState {
  if (state.state !== 'probing') return state;
  return { state: 'open', failures: state.failures, since: state.since, until: now, backoffMs: state.backoffMs };
}

/**
 * The state after a launch (or API call) of the pool ended at `now`. A success closes the
 * breaker from any state: the cloud works. A failure counts; the `failures`-th in a row opens
 * a closed breaker, a failed probe opens it again with the backoff doubled, and failures of
 * launches begun before it opened leave an open breaker's timing alone.
 */
export function afterOutcome(state: BreakerState, outcome: 'success' | 'failure', now: number, s: BreakerSettings): BreakerState {
  if (outcome === 'success') return CLOSED;
  const settled = settleBreaker(state, now, s);
  const failures = settled.failures + 1;
  switch (settled.state) {
    case 'closed':
      return failures >= s.failures ? open(failures, now, s.backoffMs, s) : { state: 'closed', failures };
    case 'open':
      return { ...settled, failures };
    case 'probing':
      return reopen(failures, settled.since, settled.backoffMs, now, s);
  }
}

function open(failures: number, now: number, backoffMs: number, s: BreakerSettings): BreakerState {
  const b = Math.min(backoffMs, s.maxBackoffMs);
  return { state: 'open', failures, since: now, until: now + b, backoffMs: b };
}

function reopen(failures: number, since: number, lastBackoffMs: number, now: number, s: BreakerSettings): BreakerState {
  const b = Math.min(lastBackoffMs * 2, s.maxBackoffMs);
  return { state: 'open', failures, since, until: now + b, backoffMs: b };
}
