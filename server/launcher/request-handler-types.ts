/**
 * What a request handler (request-handler.ts) works with and reports: its dependencies from
 * the pool worker, the outcome of each launch (for metrics), and the claim mark handlers of one
 * pass put on the shared snapshot's candidates.
 */
import type { PoolInfo, Provider } from '../../lib/drivers/contract/driver.js';
import type { Logger } from '../../lib/log.js';
import type { NodeRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';

/** Marks a snapshot candidate one handler of the pass is trying (see reuse). */
export const CLAIMED = 'claimed';

/** What a handler works with (from its pool worker). */
export interface RequestHandlerDeps {
  store: Store;
  log: Logger;
  launcherId: string;
  /**
   * The process's store session, read at every use: after a lapse it is a new one, and the
   * handler takes its request and node locks again under it (see holdsLocks).
   */
  sessionId: () => string;
  provider: Provider;
  pool: PoolInfo;
  /** Ready, unallocated nodes of this pool, from the pool worker's snapshot of this pass. */
  readyCandidates(label: string): Promise<NodeRecord[]>;
  /** Nodes of this pool that count against max-servers, now. */
  poolNodeCount(): Promise<number>;
  /** Told once per node this handler launched, when its launch has an outcome (metrics). */
  onLaunch?: (outcome: LaunchOutcome) => void;
  /**
   * A fleet member's configured pools (every provider's): a request every live launcher
   * declined waits while one of them that nobody registers (in takeover) could serve it.
   */
  fleetPools?: () => readonly FleetPool[];
}

/** A configured provider-pool, as a fleet member knows them all. */
export interface FleetPool {
  provider: string;
  pool: PoolInfo;
}

/** The outcome of one node launch: `ready`, `failed`, or `aborted` (over quota; the node is launched again). */
export interface LaunchOutcome {
  provider: string;
  pool: string;
  label: string;
  nodeId: string;
  requestor: string;
  az: string | null;
  result: 'ready' | 'failed' | 'aborted';
  /** From the node's creation to its outcome (store clock). */
  durationMs: number;
}
