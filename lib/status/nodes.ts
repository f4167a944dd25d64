/**
 * Presenters for nodes (`nodepool list`, `delete`, `request --wait`, later the web status):
 * Nodepool's columns, with `--detail` adding where the node lives and who holds it. Pure.
 */
import type { NodeRecord } from '../store/models.js';
import { ageSeconds, formatAge } from './age.js';

/** Columns of `nodepool list`, as Nodepool names them. */
export const NODE_COLUMNS = [
  'ID', 'Provider', 'Label', 'Server ID', 'Public IPv4', 'IPv6', 'State', 'Age', 'Locked',
] as const;

/** Columns `--detail` adds after {@link NODE_COLUMNS} (Hold Reason/Expires replace Nodepool's Hold Job/Comment). */
export const NODE_DETAIL_EXTRA_COLUMNS = [
  'Pool', 'Hostname', 'Private IPv4', 'AZ', 'Port', 'Launcher', 'Allocated To', 'Hold Reason', 'Hold Expires',
] as const;

/** Columns of `nodepool list --detail`. */
export const NODE_DETAIL_COLUMNS = [...NODE_COLUMNS, ...NODE_DETAIL_EXTRA_COLUMNS] as const;

/** The columns for the chosen detail level. */
export function nodeColumns(detail: boolean): readonly string[] {
  return detail ? NODE_DETAIL_COLUMNS : NODE_COLUMNS;
}

/** `DD:HH:MM:SS` left until a hold expires, `expired` once past, empty without an expiry. */
export function holdExpiresText(holdExpiration: number | null, now: number): string {
  if (holdExpiration === null) return '';
  return holdExpiration <= now ? 'expired' : formatAge(holdExpiration - now);
}

/** One table row; Label is comma-joined, Age runs from the last state change. */
export function nodeRow(n: NodeRecord, locked: boolean, now: number, detail = false): string[] {
  const row = [
    n.id, n.provider, n.labels.join(','), n.externalId ?? '', n.publicIpv4 ?? '', n.publicIpv6 ?? '',
    n.state, formatAge(now - n.stateTime), locked ? 'locked' : 'unlocked',
  ];
  if (!detail) return row;
  return [
    ...row, n.pool, n.hostname ?? '', n.privateIpv4 ?? '', n.az ?? '', String(n.connectionPort), n.launcher ?? '',
    n.allocatedTo ?? '', n.holdReason ?? '', holdExpiresText(n.holdExpiration, now),
  ];
}

/** Rows ordered by node id; `locked` holds the ids whose lock belongs to a live session. */
export function nodeRows(nodes: readonly NodeRecord[], locked: ReadonlySet<string>, now: number, detail = false): string[][] {
  return [...nodes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((n) => nodeRow(n, locked.has(n.id), now, detail));
}

/** A node as `--json` prints it: the stored record plus `locked` and `age` (seconds since the state changed). */
export type NodeJson = NodeRecord & { locked: boolean; age: number };

/** The JSON form of a node. */
export function nodeJson(n: NodeRecord, locked: boolean, now: number): NodeJson {
  return { ...n, locked, age: ageSeconds(n.stateTime, now) };
}
