/**
 * From the store's launcher registrations to placement (issue 35 §2–§4), pure: each registered
 * pool's standing as placement sees it, what a pool's own launcher publishes of it, and why a
 * waiting request is not served. Every launcher, the CLI and the web read the same
 * registrations, so they agree on where a request goes and why it waits.
 */
import { DEFAULT_POOL_PRIORITY } from '../store/components.js';
import type { FullBy, LauncherRecord, NodeRequestRecord, PoolStandingRecord } from '../store/models.js';
import { breakerVerdict, CLOSED, settleBreaker, type BreakerSettings, type BreakerState } from './breaker.js';
import { headroomStep, placeRequest, type Placement, type PoolStanding, type WaitReason, type WaitReasonCode } from './placement.js';

/** What a pool that waits for room (Nodepool's `paused`) but published no standing is full of. */
const PAUSED_FULL = { by: 'cloud-quota' as FullBy, detail: 'the pool waits for room (paused)' };

/** The time the breaker has been open since, when it is open or probing. */
const openSince = (b: BreakerState): number | undefined => (b.state === 'closed' ? undefined : b.since);

/**
 * A registered pool as placement sees it. A pool that published no standing (a Nodepool 11
 * launcher sharing the store, or one that has just started) has room and a closed breaker, and
 * is full while its `paused` says it waits for room.
 */
export function poolStandingOf(l: LauncherRecord, now: number, s: BreakerSettings): PoolStanding {
  const st = l.standing;
  const breaker = st?.breaker ?? CLOSED;
  const full = st?.full ?? (l.paused ? PAUSED_FULL : undefined);
  const since = openSince(settleBreaker(breaker, now, s));
  return {
    provider: l.provider, pool: l.pool, labels: l.supportedLabels, priority: l.priority ?? DEFAULT_POOL_PRIORITY,
    headroom: st?.headroom ?? 1, breaker: breakerVerdict(breaker, now, s),
    ...(full ? { full } : {}), ...(since !== undefined ? { breakerSince: since } : {}),
    ...(st?.noReadyImage?.length ? { noReadyImage: st.noReadyImage } : {}),
    ...(st?.tenantLimited?.length ? { tenantLimited: st.tenantLimited } : {}),
  };
}

/**
 * Where request `req` goes among the registered pools that have not declined it (a decline is
 * final for that pool, as in Nodepool). A request that names a provider (Nodepool's
 * `provider`, Zuul's preference for the provider of its other nodes) is placed among that
 * provider's pools while one of them has not declined it, as Nodepool leaves it to them.
 */
export function placeAmong(
  req: Pick<NodeRequestRecord, 'id' | 'labels' | 'declinedBy' | 'provider'> & Partial<Pick<NodeRequestRecord, 'tenantName'>>,
  launchers: readonly LauncherRecord[], now: number, s: BreakerSettings,
): Placement {
  const open = launchers.filter((l) => !req.declinedBy.includes(l.id));
  const preferred = req.provider ? open.filter((l) => l.provider === req.provider) : [];
  const among = preferred.length ? preferred : open;
  return placeRequest(req.labels, among.map((l) => poolStandingOf(l, now, s)), req.id, req.tenantName);
}

/**
 * Why a request still waits, per provider-pool: empty when a pool can serve it now (it is only
 * not taken yet), or when it is not waiting (neither requested nor pending).
 */
export function waitReasons(req: NodeRequestRecord, launchers: readonly LauncherRecord[], now: number, s: BreakerSettings): WaitReason[] {
  if (req.state !== 'requested' && req.state !== 'pending') return [];
  const placed = placeAmong(req, launchers, now, s);
  return placed.now ? [] : placed.reasons;
}

/**
 * The reasons a waiting request counts under (the waiting-requests metric): each distinct one,
 * `label-not-served` only when no pool serves its labels at all.
 */
export function waitCodes(reasons: readonly WaitReason[]): WaitReasonCode[] {
  const codes = new Set(reasons.map((r) => r.reason));
  if (codes.size > 1) codes.delete('label-not-served');
  return [...codes];
}

/** max-servers at or above this is unlimited (the config's default): such a pool has room unless it waits for it. */
const UNLIMITED = Number.MAX_SAFE_INTEGER / 2;

/**
 * The free share (0..1) of a pool's max-servers, in 5 % steps: room to launch plus its ready,
 * unallocated nodes (so a static pool's free hosts count, and a cloud pool's stock). A pool that
 * waits for room (a paused handler) has none.
 */
export function poolHeadroom(count: number, free: number, maxServers: number, waiting: boolean): number {
  if (waiting || maxServers <= 0) return 0;
  if (maxServers >= UNLIMITED) return 1;
  return headroomStep((Math.max(0, maxServers - count) + free) / maxServers) / 20;
}

/** What fills a pool, when it cannot take one more node now: max-servers reached with nothing free, or a wait for room (cloud quota). */
export function poolStandingFull(count: number, free: number, maxServers: number, waiting: boolean): { by: FullBy; detail: string } | undefined {
  const atMax = maxServers < UNLIMITED && count >= maxServers && free === 0;
  if (atMax) return { by: 'max-servers', detail: `${count} of ${maxServers} nodes, none free` };
  if (waiting) return { by: 'cloud-quota', detail: 'waiting for the cloud\'s quota' };
  return undefined;
}

/** What a pool's launcher publishes: its headroom, what fills it, its breaker, labels with nothing to boot, tenants it defers. */
export function standingOf(input: {
  headroom: number; full?: { by: FullBy; detail: string } | undefined; breaker: BreakerState;
  noReadyImage?: readonly string[]; tenantLimited?: ReadonlyArray<{ tenant: string; detail: string }>;
}): PoolStandingRecord {
  const noReadyImage = [...new Set(input.noReadyImage ?? [])].sort();
  const tenantLimited = [...(input.tenantLimited ?? [])].sort((a, b) => (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0)).map((t) => ({ ...t }));
  return {
    headroom: input.headroom, ...(input.full ? { full: input.full } : {}), breaker: input.breaker,
    ...(noReadyImage.length ? { noReadyImage } : {}), ...(tenantLimited.length ? { tenantLimited } : {}),
  };
}

/** Whether two standings differ in anything placement reads (so only a change is written). */
export function standingChanged(a: PoolStandingRecord | undefined, b: PoolStandingRecord): boolean {
  return a === undefined || JSON.stringify(a) !== JSON.stringify(b);
}

/** The breaker settings of the config's `launcher.breaker` (seconds) in ms. */
export function breakerSettings(c: { failures: number; backoff: number; maxBackoff: number; probeTimeout: number }): BreakerSettings {
  return { failures: c.failures, backoffMs: c.backoff * 1000, maxBackoffMs: c.maxBackoff * 1000, probeTimeoutMs: c.probeTimeout * 1000 };
}
