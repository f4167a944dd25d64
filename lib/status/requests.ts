/**
 * Presenters for node requests (`nodepool request-list`, the web status). Pure.
 */
import type { WaitReason } from '../fleet/placement.js';
import type { NodeRequestRecord } from '../store/models.js';
import { ageSeconds, formatAge } from './age.js';

/** Columns of `nodepool request-list` (Nodepool's, plus Age and, ours, why a request waits). */
export const REQUEST_COLUMNS = [
  'Request ID', 'Priority', 'State', 'Requestor', 'Node Types', 'Nodes', 'Declined By', 'Age', 'Waiting',
] as const;

/** Why a request is not served, per pool: `<provider>/<pool>: <reason> (<detail>)`, pools without its labels left out while another pool has them. */
export function waitText(reasons: readonly WaitReason[]): string {
  const serving = reasons.filter((r) => r.reason !== 'label-not-served');
  const shown = serving.length ? serving : reasons;
  return shown.map((r) => `${r.provider}/${r.pool}: ${r.reason} (${r.detail})`).join('; ');
}

/** One table row; lists are comma-joined, Age runs from the last state change. */
export function requestRow(r: NodeRequestRecord, now: number, reasons: readonly WaitReason[] = []): string[] {
  return [
    r.id, String(r.priority), r.state, r.requestor, r.labels.join(','), r.nodes.join(','), r.declinedBy.join(','),
    formatAge(now - r.stateTime), waitText(reasons),
  ];
}

/** Rows ordered by id, which is priority, then age; `reasons` gives a request's wait reasons. */
export function requestRows(requests: readonly NodeRequestRecord[], now: number, reasons: (r: NodeRequestRecord) => readonly WaitReason[] = () => []): string[][] {
  return [...requests].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((r) => requestRow(r, now, reasons(r)));
}

/** A request as `--json` prints it: the stored record plus `age` in seconds and, ours, `waitReasons` (empty when it is not waiting on anything). */
export type RequestJson = NodeRequestRecord & { age: number; waitReasons: WaitReason[] };

/** The JSON form of a request. */
export function requestJson(r: NodeRequestRecord, now: number, reasons: readonly WaitReason[] = []): RequestJson {
  return { ...r, age: ageSeconds(r.stateTime, now), waitReasons: reasons.map((w) => ({ ...w })) };
}
