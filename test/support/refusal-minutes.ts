/**
 * Refused writes as tests count them: the ledger keeps one aggregate per source (or user) and
 * minute, so a burst that straddles the end of a minute is two aggregates (CI 2026-12-02: three
 * 401s of one case came back as two `user: null` aggregates). Tests compare one sum per source
 * and user, whatever the minutes.
 */
import type { RefusalAggregate } from '../../lib/store/audit.js';

/** What tests read the ledger through. */
export interface RecentRefusals {
  recent(limit: number): Promise<RefusalAggregate[]>;
}

function add(into: Record<string, number>, from: Record<string, number>): Record<string, number> {
  const out = { ...into };
  for (const [k, v] of Object.entries(from)) out[k] = (out[k] ?? 0) + v;
  return out;
}

/** The `limit` newest aggregates, those of one source and user summed into one (newest first, as the ledger lists). */
export async function refusalsBySourceAndUser(ledger: RecentRefusals, limit: number): Promise<RefusalAggregate[]> {
  const merged = new Map<string, RefusalAggregate>();
  for (const a of await ledger.recent(limit)) {
    const key = JSON.stringify([a.source, a.user]);
    const m = merged.get(key);
    merged.set(key, m ? {
      ...m, minute: Math.min(m.minute, a.minute), count: m.count + a.count, limited: m.limited + a.limited,
      first: Math.min(m.first, a.first), last: Math.max(m.last, a.last),
      statuses: add(m.statuses, a.statuses), reasons: add(m.reasons, a.reasons), requests: add(m.requests, a.requests),
    } : a);
  }
  return [...merged.values()];
}
