/**
 * The pure parts of the consumer library: option defaults compiled into what the store gets,
 * which node states each operation accepts, and the patches it writes. No I/O.
 */
import type { NewNodeRequest, NodePatch, NodeState } from '../store/models.js';

/** Options of `NodepoolClient.request`. */
export interface RequestOptions {
  /** Lower is served first (the store's default is 100). */
  priority?: number;
  /** A preferred provider; others yield to it while it has live launchers that have not declined. */
  provider?: string;
  /** May ready nodes be reused (default true). */
  reuse?: boolean;
  /**
   * Tie the request to the client's session, so it vanishes when the client dies or closes
   * before accepting (default true).
   */
  ephemeral?: boolean;
}

/** States `release` moves to `used`. */
export const RELEASABLE_STATES: readonly NodeState[] = ['in-use', 'hold', 'ready'];

/** States `hold` moves to `hold` (holding a held node again updates its reason and expiry). */
export const HOLDABLE_STATES: readonly NodeState[] = ['ready', 'in-use', 'hold'];

/** The store input of a new request. Thrown: RangeError for an empty label list or a bad priority. */
export function newRequestInput(labels: readonly string[], opts: RequestOptions, requestor: string, sessionId: string): NewNodeRequest {
  if (labels.length === 0) throw new RangeError('a node request needs at least one label');
  if (opts.priority !== undefined && (!Number.isInteger(opts.priority) || opts.priority < 0 || opts.priority > 999)) {
    throw new RangeError(`priority must be an integer from 0 to 999, got ${opts.priority}`);
  }
  const input: NewNodeRequest = {
    labels: [...labels],
    requestor,
    reuse: opts.reuse ?? true,
    provider: opts.provider ?? null,
    requestorSession: (opts.ephemeral ?? true) ? sessionId : null,
  };
  if (opts.priority !== undefined) input.priority = opts.priority;
  return input;
}

/** How often a session with this TTL is renewed: three times per TTL, so one missed renewal is harmless. */
export function renewIntervalMs(ttlMs: number): number {
  return Math.max(50, Math.floor(ttlMs / 3));
}

/**
 * What `accept` writes to each node: in use, owned by the session when it keeps the lock, else
 * handed off (kept until released, although nobody locks it).
 */
export function acceptPatch(sessionId: string, keepLocked: boolean): NodePatch {
  return keepLocked ? { state: 'in-use', consumerSession: sessionId, handedOff: false } : { state: 'in-use', consumerSession: null, handedOff: true };
}

/** What `hold` writes: state hold with its reason and, with `expireSeconds`, an expiry from `now`. */
export function holdPatch(reason: string, expireSeconds: number | undefined, now: number): NodePatch {
  if (expireSeconds !== undefined && (!Number.isFinite(expireSeconds) || expireSeconds <= 0)) {
    throw new RangeError(`hold expiry must be a positive number of seconds, got ${expireSeconds}`);
  }
  return { state: 'hold', holdReason: reason, holdExpiration: expireSeconds === undefined ? null : now + Math.round(expireSeconds * 1000) };
}

/** What `release` writes: used, with no consumer session (the deleter takes it from here). */
export function releasePatch(): NodePatch {
  return { state: 'used', consumerSession: null, handedOff: false };
}
