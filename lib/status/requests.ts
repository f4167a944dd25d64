/**
 * Presenters for node requests (`nodepool request-list`, later the web status). Pure.
 */
import type { NodeRequestRecord } from '../store/models.js';
import { ageSeconds, formatAge } from './age.js';

/** Columns of `nodepool request-list` (Nodepool's, plus Age). */
export const REQUEST_COLUMNS = [
  'Request ID', 'Priority', 'State', 'Requestor', 'Node Types', 'Nodes', 'Declined By', 'Age',
] as const;

/** One table row; lists are comma-joined, Age runs from the last state change. */
export function requestRow(r: NodeRequestRecord, now: number): string[] {
  return [
    r.id, String(r.priority), r.state, r.requestor, r.labels.join(','), r.nodes.join(','), r.declinedBy.join(','),
    formatAge(now - r.stateTime),
  ];
}

/** Rows ordered by id, which is priority, then age. */
export function requestRows(requests: readonly NodeRequestRecord[], now: number): string[][] {
  return [...requests].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((r) => requestRow(r, now));
}

/** A request as `--json` prints it: the stored record plus `age` in seconds. */
export type RequestJson = NodeRequestRecord & { age: number };

/** The JSON form of a request. */
export function requestJson(r: NodeRequestRecord, now: number): RequestJson {
  return { ...r, age: ageSeconds(r.stateTime, now) };
}
