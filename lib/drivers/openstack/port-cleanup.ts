/**
 * Provider `port-cleanup-interval` (Nodepool adapter.py `_cleanupLeakedPorts`): a compute
 * port (device owner `compute:*` or none; not a router's or DHCP's) that is DOWN on two
 * checks more than `interval` seconds apart is deleted. The first check only notes the DOWN
 * ports; each later check, once more than `interval` s have passed since the last one,
 * deletes the ports DOWN both then and now, and notes the DOWN ports afresh. Pure.
 */

/** A Neutron port as the cleanup sees it. */
export interface PortInfo {
  id: string;
  status: string;
  deviceOwner: string | null;
}

/** What the tracker keeps between checks. */
export interface PortCleanupState {
  /** Epoch ms of the last check that noted the DOWN ports. */
  lastCheck: number;
  down: ReadonlySet<string>;
}

/** Whether a port is one the cleanup may consider: DOWN and a compute port (or owned by nothing). */
export function isDownComputePort(p: PortInfo): boolean {
  return p.status === 'DOWN' && (!p.deviceOwner || p.deviceOwner.startsWith('compute:'));
}

/**
 * What to do at `now`: `note` (first check: remember the DOWN ports), `wait` (not more than
 * `intervalS` since the last check), or `delete` the given ports (DOWN at the last check and
 * now). `intervalS` 0 disables the cleanup (`wait` for ever).
 */
export function planPortCleanup(state: PortCleanupState | undefined, now: number, intervalS: number, ports: readonly PortInfo[] | undefined):
  { action: 'wait' } | { action: 'note' } | { action: 'delete'; ids: string[] } {
  if (intervalS <= 0) return { action: 'wait' };
  if (!state) return { action: 'note' };
  if (Math.floor((now - state.lastCheck) / 1000) <= intervalS || !ports) return { action: 'wait' };
  return { action: 'delete', ids: ports.filter(isDownComputePort).map((p) => p.id).filter((id) => state.down.has(id)) };
}

/** Whether the check at `now` needs the port list (so a waiting check costs no API call). */
export function portCheckDue(state: PortCleanupState | undefined, now: number, intervalS: number): boolean {
  return intervalS > 0 && (!state || Math.floor((now - state.lastCheck) / 1000) > intervalS);
}

/** The state after a check at `now` that saw `ports`. */
export function notePorts(now: number, ports: readonly PortInfo[]): PortCleanupState {
  return { lastCheck: now, down: new Set(ports.filter(isDownComputePort).map((p) => p.id)) };
}
