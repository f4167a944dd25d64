/**
 * Pure decisions of the launcher: which requests a pool worker takes, why it declines,
 * whether a declined request fails, what the deleter and the cleanup worker act on, and how
 * many min-ready requests a label needs. No I/O here; the workers feed in store snapshots.
 */
import type { PoolInfo } from '../../lib/drivers/contract/driver.js';
import type { LauncherRecord, NodeRecord, NodeRequestRecord, RequestState } from '../../lib/store/models.js';
import type { FleetPool } from './request-handler-types.js';

/** The requestor name of the launcher's own min-ready requests. */
export const MIN_READY_REQUESTOR = 'NodePool:min-ready';

/** `<hostname>-<pid>-PoolWorker.<provider>-<pool>`, as Nodepool names its launchers. */
export function launcherId(hostname: string, pid: number, provider: string, pool: string): string {
  return `${hostname}-${pid}-PoolWorker.${provider}-${pool}`;
}

/**
 * Whether a pool worker should leave a request to the provider the request prefers: that
 * provider has live launchers and not all of them have declined it.
 */
export function yieldsToPreferredProvider(req: NodeRequestRecord, provider: string, launchers: readonly LauncherRecord[]): boolean {
  if (!req.provider || req.provider === provider) return false;
  const preferred = launchers.filter((l) => l.provider === req.provider);
  return preferred.length > 0 && preferred.some((l) => !req.declinedBy.includes(l.id));
}

/**
 * Whether a pool takes a request at all. A pool whose driver cannot launch (static: it only
 * hands out registered nodes) never takes a `reuse: false` request that is not a min-ready one:
 * it could only wait for good, holding the pool (as Nodepool, whose static pools leave such a
 * request to other providers and go on serving). A min-ready request is taken and declined.
 */
export function takes(req: NodeRequestRecord, canLaunch: boolean): boolean {
  return canLaunch || req.reuse || req.requestor === MIN_READY_REQUESTOR;
}

/** Why a pool declines a request outright, or null when it can try (images and quota are asked later). */
export function declineReason(req: NodeRequestRecord, pool: PoolInfo): string | null {
  if (pool.maxServers <= 0) return 'pool is disabled by max-servers';
  const missing = [...new Set(req.labels.filter((l) => !pool.labels.includes(l)))];
  if (missing.length) return `node type(s) [${missing.join(', ')}] not available`;
  return null;
}

/**
 * After a decline: failed when every live launcher has declined, else back to requested. In a
 * fleet, a configured pool that no live launcher registers is between owners (its owner died
 * and the lease has not moved yet): while one of those could serve the request, it waits.
 */
export function stateAfterDecline(
  declinedBy: readonly string[], launchers: readonly LauncherRecord[], req?: NodeRequestRecord, fleetPools: readonly FleetPool[] = [],
): 'failed' | 'requested' {
  const declined = new Set(declinedBy);
  if (!launchers.every((l) => declined.has(l.id))) return 'requested';
  const registered = new Set(launchers.map((l) => `${l.provider}/${l.pool}`));
  const between = fleetPools.some((p) => !registered.has(`${p.provider}/${p.pool.name}`) && req !== undefined && declineReason(req, p.pool) === null);
  return between ? 'requested' : 'failed';
}

/**
 * The states in which a handler may decline its request: a pending one only once the handler
 * marked it pending itself (before that, its copy is the pool worker's listed one, not read
 * again under the lock, and a pending request is another handler's).
 */
export function declinableStates(markedPending: boolean): readonly RequestState[] {
  return markedPending ? ['requested', 'pending'] : ['requested'];
}

/**
 * What the deleter does with a node it found unlocked (or locked by a lapsed session):
 * delete it, or leave it. Building/init nodes without a live lock were abandoned by a dead
 * launcher. An in-use node is abandoned when its consumer session has lapsed, or, with no
 * consumer session, when it was not handed off (Nodepool's rule: a consumer such as Zuul holds
 * the lock of the nodes it uses, so an unlocked one lost its consumer).
 */
export function deleterVerdict(node: NodeRecord, consumerLive: boolean): 'delete' | 'keep' {
  switch (node.state) {
    case 'used': case 'failed': case 'aborted': case 'deleting': case 'building': case 'init':
      return 'delete';
    case 'in-use':
      if (node.consumerSession !== null) return consumerLive ? 'keep' : 'delete';
      return node.handedOff ? 'keep' : 'delete';
    default:
      return 'keep';
  }
}

/** Ready nodes older than `max-ready-age` (seconds; 0 = never) and not allocated. */
export function expiredReadyNodes(nodes: readonly NodeRecord[], maxReadyAge: ReadonlyMap<string, number>, now: number): NodeRecord[] {
  return nodes.filter((n) => {
    if (n.state !== 'ready' || n.allocatedTo !== null) return false;
    const ages = n.labels.map((l) => maxReadyAge.get(l) ?? 0).filter((a) => a > 0);
    return ages.length > 0 && now - n.stateTime > Math.min(...ages) * 1000;
  });
}

/**
 * Held nodes past their own expiration or `max-hold-age` (seconds; 0 = unlimited), as Nodepool
 * 11: deleted once `now - state_time ≥ min(hold_expiration, max-hold-age)`. `holdExpiration`
 * is the point in time (state_time + Zuul's hold_expiration, or the operator's `--expire`).
 */
export function expiredHeldNodes(nodes: readonly NodeRecord[], maxHoldAge: number, now: number): NodeRecord[] {
  return nodes.filter((n) => {
    if (n.state !== 'hold') return false;
    const limits = [n.holdExpiration ?? Infinity, maxHoldAge > 0 ? n.stateTime + maxHoldAge * 1000 : Infinity];
    return now >= Math.min(...limits);
  });
}

/**
 * How many min-ready requests each label needs now: min-ready minus its ready, unallocated
 * nodes, for labels that have no outstanding min-ready request and can be served.
 */
export function minReadyNeeds(
  labels: ReadonlyArray<{ name: string; minReady: number }>,
  nodes: readonly NodeRecord[],
  requests: readonly NodeRequestRecord[],
  servable: (label: string) => boolean,
): Map<string, number> {
  const outstanding = new Set(requests
    .filter((r) => r.requestor === MIN_READY_REQUESTOR && (r.state === 'requested' || r.state === 'pending'))
    .flatMap((r) => r.labels));
  const needs = new Map<string, number>();
  for (const { name, minReady } of labels) {
    if (minReady <= 0 || outstanding.has(name) || !servable(name)) continue;
    const ready = nodes.filter((n) => n.state === 'ready' && n.allocatedTo === null && n.labels.includes(name)).length;
    if (minReady > ready) needs.set(name, minReady - ready);
  }
  return needs;
}

