/**
 * The liveness records the state store keeps: sessions, the locks they hold and the launchers
 * they register. Times are epoch milliseconds; records are plain JSON values.
 */
import type { BreakerState } from '../fleet/breaker.js';

/**
 * A store session: a process's liveness lease. Locks and launcher registrations belong to a
 * session and lapse with it (ZooKeeper's ephemeral nodes, in any backend).
 */
export interface SessionRecord {
  id: string;
  /** What holds it, e.g. `nodepool-server`, `nodepool request`. */
  owner: string;
  hostname: string;
  pid: number;
  created: number;
  /** Last renewal; the session is live while `now - renewed <= ttlMs`. */
  renewed: number;
  ttlMs: number;
}

/** A lock on `node:<id>` or `request:<id>`, held by a session. */
export interface LockRecord {
  resource: string;
  sessionId: string;
  acquired: number;
  /** False when the holding session has lapsed (a stale lock: free to take). */
  live: boolean;
}

/** A pool worker announcing which labels it can serve. */
export interface LauncherRecord {
  /** `<hostname>-<pid>-PoolWorker.<provider>-<pool>`. */
  id: string;
  sessionId: string;
  provider: string;
  pool: string;
  /** Labels this pool can serve. */
  supportedLabels: string[];
  registered: number;
  /** Nodepool 11's pool `priority` (lower is preferred; default 100). */
  priority?: number;
  /** True while the pool waits for quota (Nodepool 11's pool component `paused`). */
  paused?: boolean;
  /** Ours, beside Nodepool's fields: the pool's standing for placement (issue 35), as its owner last published it. */
  standing?: PoolStandingRecord;
}

/** What limits a pool that cannot launch one more node now. */
export type FullBy = 'max-servers' | 'cloud-quota' | 'tenant-limit';

/**
 * A pool's standing, published by the launcher that runs it when it changes, so that every
 * launcher places requests alike (lib/fleet/placement.ts).
 */
export interface PoolStandingRecord {
  /** The free share (0..1) of the pool's tightest limit. */
  headroom: number;
  /** Set while the pool cannot launch one more node, with what stops it. */
  full?: { by: FullBy; detail: string };
  /** The pool's circuit breaker (lib/fleet/breaker.ts). */
  breaker: BreakerState;
  /** Labels of the pool with nothing to boot now (no ready image in the provider). */
  noReadyImage?: string[];
  /** Zuul tenants whose requests the pool defers at their `tenant-resource-limits`, with the figures. */
  tenantLimited?: TenantLimitedRecord[];
}

/** A tenant a pool defers requests of, and why (its limit, use and the request's need). */
export interface TenantLimitedRecord {
  tenant: string;
  detail: string;
}

/**
 * What {@link SessionStore.updateLauncher} may change in a registered launcher (Nodepool 11
 * refreshes its pool component's labels and priority every pass and `paused` as it changes).
 */
export type LauncherPatch = Partial<Pick<LauncherRecord, 'supportedLabels' | 'priority' | 'paused' | 'standing'>>;
