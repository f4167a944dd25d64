/**
 * What a fleet member does about pool ownership in one pass (issue 35 §1), as a pure decision
 * over what it read from the store: each provider-pool is owned by the rendezvous winner among
 * the live members, and run only under that member's lease on it, so two members never run one
 * pool at once. A member that is not the owner of a pool it runs stops it first and releases the
 * lease after; the owner takes a lease only once nobody holds it (a dead holder's lapses with
 * its session). A member whose session is not confirmed stops every pool: it may already have
 * been replaced. Pools that a fixed server (`--provider`) registers are left to it.
 */
import { rendezvousOwner } from '../../lib/fleet/rendezvous.js';

/** What the member read this pass. */
export interface OwnershipView {
  /** This member's id (its fleet session). */
  me: string;
  /** Live members, this one included or not. */
  members: readonly string[];
  /** The provider-pool keys in this member's config. */
  pools: readonly string[];
  /** Pool keys that a launcher outside the fleet registers. */
  fixed: ReadonlySet<string>;
  /** The holder of each pool lease taken (live sessions only). */
  leases: ReadonlyMap<string, string>;
  /** Pool keys running here now. */
  running: ReadonlySet<string>;
  /** Whether this member's session was confirmed recently enough to act as its holder. */
  confirmed: boolean;
}

/** The pass's actions, to be done in this order: stop, release, take (then start), start. */
export interface OwnershipPlan {
  /** Pools to stop running here. */
  stop: string[];
  /** Leases to release (after their pools stopped). */
  release: string[];
  /** Free leases to try to take; start the pool once taken. */
  take: string[];
  /** Pools whose lease this member holds as their owner but which do not run yet. */
  start: string[];
  /** Pools whose owner is this member while another still holds the lease (a dead member's lapses). */
  waiting: string[];
}

/** The owner of `pool` among `members` (the member itself counted). */
export const poolOwner = (pool: string, members: readonly string[], me: string): string | undefined =>
  rendezvousOwner(pool, members.includes(me) ? members : [...members, me]);

export function planOwnership(v: OwnershipView): OwnershipPlan {
  const plan: OwnershipPlan = { stop: [], release: [], take: [], start: [], waiting: [] };
  const mine = [...v.leases].filter(([, holder]) => holder === v.me).map(([pool]) => pool);
  if (!v.confirmed) {
    plan.stop = [...v.running].sort();
    plan.release = mine.sort();
    return plan;
  }
  const configured = new Set(v.pools);
  for (const pool of [...v.running].sort()) {
    const keep = configured.has(pool) && !v.fixed.has(pool) && v.leases.get(pool) === v.me && poolOwner(pool, v.members, v.me) === v.me;
    if (!keep) plan.stop.push(pool);
  }
  for (const pool of mine.sort()) {
    if (!configured.has(pool) || v.fixed.has(pool) || poolOwner(pool, v.members, v.me) !== v.me) plan.release.push(pool);
  }
  for (const pool of [...configured].sort()) {
    if (v.fixed.has(pool) || poolOwner(pool, v.members, v.me) !== v.me) continue;
    const holder = v.leases.get(pool);
    if (holder === undefined) plan.take.push(pool);
    else if (holder !== v.me) plan.waiting.push(pool);
    else if (!v.running.has(pool)) plan.start.push(pool);
  }
  return plan;
}
