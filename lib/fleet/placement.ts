/**
 * Where a node request goes (issue 35 §2, §4), as pure decisions over every pool's standing,
 * which each launcher reads from the store so that all of them agree: among the pools that can
 * serve all the request's labels now, the one with the lowest `priority` (Nodepool 11's meaning
 * of the key, which sites rely on, is kept: a preferred pool serves while it can), then the most
 * headroom (the free share of its tightest limit: max-servers, cloud quota, tenant limits), in
 * 5 % steps so that a server or two of difference does not move requests back and forth, then
 * the name; a pool at quota
 * or whose breaker holds leaves the request to one that can serve it now. When none can, the
 * request waits on the best pool that will (as Nodepool's pool at quota takes it and pauses).
 * For a request no pool can serve now, each pool's reason says why, machine-readable.
 */
import type { BreakerVerdict } from './breaker.js';
import { rendezvousWeight } from './rendezvous.js';

/** What limits a pool that is full. */
export type QuotaLimit = 'max-servers' | 'cloud-quota' | 'tenant-limit';

/** One provider-pool as placement sees it. */
export interface PoolStanding {
  provider: string;
  pool: string;
  /** The labels the pool serves. */
  labels: readonly string[];
  /** Nodepool's pool `priority`: lower is preferred (default 100). */
  priority: number;
  /** The free share (0..1) of the pool's tightest limit. */
  headroom: number;
  /** Set when the pool cannot launch one more node now, with what stops it. */
  full?: { by: QuotaLimit; detail: string };
  /** The pool's breaker now, and since when it has been open. */
  breaker: BreakerVerdict;
  breakerSince?: number;
  /** Paused by an operator or by the launcher (Nodepool's paused handler). */
  paused?: boolean;
  /** Labels of the pool without a ready image to boot. */
  noReadyImage?: readonly string[];
  /** Tenants whose requests the pool defers at their resource limits, with the figures. */
  tenantLimited?: ReadonlyArray<{ tenant: string; detail: string }>;
}

/** Why a waiting request is not served by one pool now. */
export const WAIT_REASON_CODES = ['label-not-served', 'paused', 'no-ready-image', 'at-quota', 'tenant-limit', 'breaker-open'] as const;
export type WaitReasonCode = typeof WAIT_REASON_CODES[number];

/** A machine-readable reason, per provider-pool, for a request still waiting. */
export interface WaitReason {
  provider: string;
  pool: string;
  reason: WaitReasonCode;
  /** Words for people: the labels, the limit and its numbers. */
  detail: string;
  /** Since when (breaker-open: when it opened), epoch ms. */
  since?: number;
}

/** The pool key placement and ownership use: `<provider>/<pool>`. */
export const poolKey = (p: Pick<PoolStanding, 'provider' | 'pool'>): string => `${p.provider}/${p.pool}`;

/** Headroom in 5 % steps, so that a server or two of difference falls to the name, not back and forth. */
export const headroomStep = (headroom: number): number => Math.floor(Math.max(0, Math.min(1, headroom)) * 20);

/** Why `p` cannot serve a request for `labels` (of Zuul tenant `tenant`) now; undefined when it can. */
export function waitReason(p: PoolStanding, labels: readonly string[], tenant?: string | null): WaitReason | undefined {
  const at = (reason: WaitReasonCode, detail: string, since?: number): WaitReason =>
    ({ provider: p.provider, pool: p.pool, reason, detail, ...(since !== undefined ? { since } : {}) });
  const missing = labels.filter((l) => !p.labels.includes(l));
  if (missing.length) return at('label-not-served', `does not serve ${missing.join(', ')}`);
  if (p.paused) return at('paused', 'paused');
  const noImage = labels.filter((l) => p.noReadyImage?.includes(l));
  if (noImage.length) return at('no-ready-image', `no ready image for ${noImage.join(', ')}`);
  if (p.breaker === 'hold') return at('breaker-open', 'breaker open after launch failures', p.breakerSince);
  if (p.full) return at(p.full.by === 'tenant-limit' ? 'tenant-limit' : 'at-quota', `${p.full.by}: ${p.full.detail}`);
  const limited = tenant ? p.tenantLimited?.find((t) => t.tenant === tenant) : undefined;
  if (limited) return at('tenant-limit', `tenant ${limited.tenant}: ${limited.detail}`);
  return undefined;
}

/**
 * Lower priority first, then more headroom (5 % steps); pools still equal are ordered by
 * rendezvous weight of `tie` (the request id): the same order on every launcher, and requests
 * spread over equal pools instead of all going to one (by name without a tie key).
 */
const byPreference = (tie: string | undefined) => (a: PoolStanding, b: PoolStanding): number => {
  const first = a.priority - b.priority || headroomStep(b.headroom) - headroomStep(a.headroom);
  if (first !== 0) return first;
  if (tie !== undefined) {
    const wa = rendezvousWeight(poolKey(a), tie);
    const wb = rendezvousWeight(poolKey(b), tie);
    if (wa !== wb) return wa > wb ? -1 : 1;
  }
  return poolKey(a) < poolKey(b) ? -1 : poolKey(a) > poolKey(b) ? 1 : 0;
};

/** The decision for one request. */
export interface Placement {
  /** The pool that should take the request, or undefined when no pool ever can (a label nobody serves). */
  take: string | undefined;
  /** Whether that pool can serve it now (false: the request waits there). */
  now: boolean;
  /** Every pool's reason not to serve it now (empty when the chosen pool serves it now). */
  reasons: WaitReason[];
}

/**
 * Which pool takes a request for `labels` (of Zuul tenant `tenant`, whose resource limits a pool
 * may defer it at): the preferred pool that can serve it now; else the
 * preferred pool that serves the labels and is not paused, preferring one whose breaker lets a
 * launch through, where the request waits. `tie` (the request id) orders pools still equal.
 */
export function placeRequest(labels: readonly string[], pools: readonly PoolStanding[], tie?: string, tenant?: string | null): Placement {
  const order = byPreference(tie);
  const now = pools.filter((p) => waitReason(p, labels, tenant) === undefined).sort(order);
  if (now[0]) return { take: poolKey(now[0]), now: true, reasons: [] };
  const reasons = pools.map((p) => waitReason(p, labels, tenant)).filter((r): r is WaitReason => r !== undefined);
  const later = pools.filter((p) => !p.paused && labels.every((l) => p.labels.includes(l)))
    .sort((a, b) => Number(a.breaker === 'hold') - Number(b.breaker === 'hold') || order(a, b));
  return { take: later[0] ? poolKey(later[0]) : undefined, now: false, reasons };
}
