/**
 * Registration planning for the static driver (pure): configured hosts × this provider's node
 * records × scan outcomes → register, deregister and update actions, plus the problems to log.
 * The provider scans the hosts, asks for a plan, and carries it out with locks.
 *
 * Counting follows Nodepool: a host needs `max-parallel-jobs` records in any state (a record
 * being deleted comes back through nodeDeleted); the excess is counted over records that are
 * not already being deleted. Only ready, unallocated records are ever deregistered or updated;
 * in-use nodes are left alone and simply not replaced.
 */
import net from 'node:net';
import type { NewNode, NodePatch, NodeRecord } from '../../store/models.js';
import { hostKeyMismatch } from '../../ssh/host-keys.js';
import { fingerprint } from '../../config/config-equals.js';
import { hostId, type StaticHost } from './config.js';

/** What scanning a host gave: its SSH host keys (none for winrm), or why it failed. */
export type ScanOutcome = { ok: true; keys: string[] } | { ok: false; reason: string };

/** One step of a plan. `candidates` are tried in order until `count` records are deregistered. */
export type RegistrationAction =
  | { kind: 'register'; hostId: string; count: number; node: NewNode; slots: number[] }
  | { kind: 'deregister'; hostId: string; count: number; candidates: string[]; reason: string }
  | { kind: 'update'; hostId: string; nodeId: string; patch: NodePatch };

/** A host that cannot be registered, and why: it did not answer, or its host key is not the configured one. */
export interface HostProblem {
  hostId: string;
  kind: 'unreachable' | 'host-key';
  message: string;
}

/** What to do, and what to report. */
export interface RegistrationPlan {
  actions: RegistrationAction[];
  problems: HostProblem[];
}

/** What {@link planRegistration} works on. */
export interface PlanInput {
  provider: string;
  hosts: readonly StaticHost[];
  /** Every node record of this provider, any state. */
  records: readonly NodeRecord[];
  /** Scan outcome per host id; a configured host without one is not touched. */
  scans: ReadonlyMap<string, ScanOutcome>;
}

/** The host identity of a node record (`hostname:connectionPort`), as {@link StaticHost.id}. */
export function recordHostId(r: Pick<NodeRecord, 'hostname' | 'connectionPort'>): string {
  return hostId({ name: r.hostname ?? '', connectionPort: r.connectionPort });
}

/** The launcher id static registrations carry. */
export function staticLauncherId(provider: string): string {
  return `static:${provider}`;
}

/** Whether the host is scanned for SSH keys (ssh, network_cli) or only connected to (winrm). */
export function gathersKeys(host: StaticHost): boolean {
  return host.node.connectionType !== 'winrm';
}

/**
 * Whether the host is taken as configured, with no connection (Nodepool's `checkHost`): an
 * ssh or network_cli host with `host-key-checking: false`, whose `host-key` list becomes its
 * nodes' host keys. A winrm host is still connected to: it has no keys to trust instead.
 */
export function skipsScan(host: StaticHost): boolean {
  return gathersKeys(host) && !host.node.hostKeyChecking;
}

/**
 * The lowest `count` slots (0…max-parallel-jobs−1) no record of the host has. Records that
 * carry no slot (registered before slots existed) hold none, so there are always enough.
 */
export function freeSlots(records: ReadonlyArray<Pick<NodeRecord, 'slot'>>, max: number, count: number): number[] {
  const used = new Set(records.map((r) => r.slot).filter((s): s is number => typeof s === 'number'));
  const free: number[] = [];
  for (let s = 0; free.length < count; s++) if (!used.has(s)) free.push(s);
  return free;
}

/** The host keys to register with, or why the host must not be registered. */
export function acceptScan(host: StaticHost, scan: ScanOutcome): { ok: true; keys: string[] } | ({ ok: false } & Omit<HostProblem, 'hostId'>) {
  if (!scan.ok) return { ok: false, kind: 'unreachable', message: `${host.id}: unreachable, not registered: ${scan.reason}` };
  if (!gathersKeys(host)) return { ok: true, keys: [] };
  if (skipsScan(host)) return { ok: true, keys: [...host.node.hostKey] };
  const mismatch = hostKeyMismatch(host.node.hostKey, scan.keys);
  if (mismatch) return { ok: false, kind: 'host-key', message: `${host.id}: ${mismatch}; not registered` };
  return { ok: true, keys: scan.keys };
}

/** The fields a ready record of this host has, given its scanned keys (and, for a new record, its slot). */
export function registrationFields(provider: string, host: StaticHost, hostKeys: readonly string[], slot?: number): NewNode {
  const name = host.node.name;
  return {
    ...(slot === undefined ? {} : { slot }),
    state: 'ready',
    provider,
    pool: host.pool,
    labels: [...host.node.labels],
    launcher: staticLauncherId(provider),
    hostname: name,
    interfaceIp: name,
    publicIpv4: net.isIPv4(name) ? name : null,
    publicIpv6: net.isIPv6(name) ? name : null,
    username: host.node.username,
    connectionType: host.node.connectionType,
    connectionPort: host.node.connectionPort,
    hostKeys: [...hostKeys],
    attributes: { ...host.attributes },
    pythonPath: host.node.pythonPath,
    shellType: host.node.shellType ?? null,
  };
}

const UPDATABLE = [
  'pool', 'labels', 'username', 'connectionType', 'connectionPort', 'hostKeys', 'attributes', 'interfaceIp', 'publicIpv4', 'publicIpv6',
  'pythonPath', 'shellType',
] as const;

/** The fields of a ready record that differ from what the config and scan want (empty when none). */
export function recordDrift(record: NodeRecord, wanted: NewNode): NodePatch {
  const patch: Record<string, unknown> = {};
  for (const key of UPDATABLE) {
    if (fingerprint(record[key]) !== fingerprint(wanted[key])) patch[key] = wanted[key];
  }
  return patch as NodePatch;
}

/**
 * Splits a host's staying records into those whose slot stands (a unique slot below `max`,
 * or a busy record, which is never touched) and the ready ones that need a new slot.
 */
function slotted(records: readonly NodeRecord[], max: number, leaving: ReadonlySet<string>): { keep: NodeRecord[]; reslot: NodeRecord[] } {
  const keep: NodeRecord[] = [];
  const reslot: NodeRecord[] = [];
  const taken = new Set<number>();
  // Busy records first: their slot is theirs; a ready record sharing it moves.
  const order = [...records].filter((r) => !leaving.has(r.id)).sort((a, b) => Number(isTakeable(a)) - Number(isTakeable(b)));
  for (const r of order) {
    const s = r.slot;
    const valid = typeof s === 'number' && s >= 0 && s < max && !taken.has(s);
    if (valid) taken.add(s);
    if (valid || !isTakeable(r)) keep.push(r);
    else reslot.push(r);
  }
  return { keep, reslot };
}

function isTakeable(r: NodeRecord): boolean {
  return r.state === 'ready' && r.allocatedTo === null;
}

/** Ready records nobody holds an allocation on: the only ones the driver may take back. */
function takeable(records: readonly NodeRecord[]): NodeRecord[] {
  return records.filter(isTakeable).sort((a, b) => (a.id < b.id ? 1 : -1));
}

/** Plans one sync of the provider's registrations (Nodepool's StaticNodeProvider._start). */
export function planRegistration(input: PlanInput): RegistrationPlan {
  const actions: RegistrationAction[] = [];
  const problems: HostProblem[] = [];
  const byHost = new Map<string, NodeRecord[]>();
  for (const r of input.records) {
    const id = recordHostId(r);
    byHost.set(id, [...(byHost.get(id) ?? []), r]);
  }
  const configured = new Set<string>();
  for (const host of input.hosts) {
    configured.add(host.id);
    const scan = input.scans.get(host.id);
    if (!scan) continue;
    const records = byHost.get(host.id) ?? [];
    const accepted = acceptScan(host, scan);
    if (!accepted.ok) {
      problems.push({ hostId: host.id, kind: accepted.kind, message: accepted.message });
      const ready = takeable(records);
      if (ready.length) actions.push({ kind: 'deregister', hostId: host.id, count: ready.length, candidates: ready.map((r) => r.id), reason: accepted.message });
      continue;
    }
    const wanted = registrationFields(input.provider, host, accepted.keys);
    const max = host.node.maxParallelJobs;
    const live = records.filter((r) => r.state !== 'deleting');
    const missing = max - records.length;
    const excess = live.length - max;
    const ready = takeable(records);
    const leaving = excess > 0 ? ready.slice(0, excess) : [];
    const leavingIds = new Set(leaving.map((r) => r.id));
    // A ready record without a valid slot of its own (older records, a lowered max-parallel-jobs) gets a free one.
    const { keep, reslot } = slotted(records, max, leavingIds);
    const slots = freeSlots(keep, max, Math.max(missing, 0) + reslot.length);
    if (missing > 0) actions.push({ kind: 'register', hostId: host.id, count: missing, node: wanted, slots: slots.slice(0, missing) });
    const newSlot = new Map(reslot.map((r, i) => [r.id, slots[Math.max(missing, 0) + i] as number]));
    if (leaving.length) {
      actions.push({ kind: 'deregister', hostId: host.id, count: excess, candidates: ready.map((r) => r.id), reason: `${host.id}: more records (${live.length}) than max-parallel-jobs (${max})` });
    }
    for (const r of ready) {
      if (leavingIds.has(r.id)) continue;
      const patch = recordDrift(r, wanted);
      const slot = newSlot.get(r.id);
      if (slot !== undefined) patch.slot = slot;
      if (Object.keys(patch).length) actions.push({ kind: 'update', hostId: host.id, nodeId: r.id, patch });
    }
  }
  for (const [id, records] of byHost) {
    if (configured.has(id)) continue;
    const ready = takeable(records);
    if (ready.length) actions.push({ kind: 'deregister', hostId: id, count: ready.length, candidates: ready.map((r) => r.id), reason: `${id}: no longer configured` });
  }
  return { actions, problems };
}
