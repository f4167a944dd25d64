/**
 * The timing of a launcher fleet's takeover (docs/fleet.md): a dead member's pool leases go
 * with its store session, ZooKeeper ends a session up to a tick (2 s) after its timeout, and
 * the next ownership pass (1 s) takes them; so a member's session lapses
 * {@link TAKEOVER_MARGIN_S} before `launcher.takeover-timeout`, or at `session-ttl` when that
 * is shorter. Pure.
 */

/** Seconds between a member's session lapsing and the takeover bound. */
export const TAKEOVER_MARGIN_S = 4;

/** The store session timeout of a fleet member, in seconds. */
export function fleetSessionTtlS(sessionTtlS: number, takeoverTimeoutS: number): number {
  return Math.min(sessionTtlS, takeoverTimeoutS - TAKEOVER_MARGIN_S);
}
