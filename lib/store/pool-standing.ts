/**
 * A launcher registration's `standing` (ours, issue 35), checked the same in every backend:
 * written only when whole and sane, read back as nothing when it is not (a pool whose
 * standing cannot be read is placed as one that has told nothing, never a stopped loop).
 */
import type { BreakerState } from '../fleet/breaker.js';
import { StoreError } from '../errors.js';
import type { FullBy, PoolStandingRecord } from './session-records.js';

const FULL_BY: readonly FullBy[] = ['max-servers', 'cloud-quota', 'tenant-limit'];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isCount = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

/** The breaker state in `v`, or undefined when it is not one. */
function breakerFrom(v: unknown): BreakerState | undefined {
  if (!isObject(v) || !isCount(v.failures)) return undefined;
  switch (v.state) {
    case 'closed':
      return { state: 'closed', failures: v.failures };
    case 'open':
      return isTime(v.since) && isTime(v.until) && isTime(v.backoffMs)
        ? { state: 'open', failures: v.failures, since: v.since, until: v.until, backoffMs: v.backoffMs } : undefined;
    case 'probing':
      return isTime(v.since) && isTime(v.probeStarted) && isTime(v.backoffMs)
        ? { state: 'probing', failures: v.failures, since: v.since, probeStarted: v.probeStarted, backoffMs: v.backoffMs } : undefined;
    default:
      return undefined;
  }
}

/** The standing in `v` (a parsed JSON value), as a fresh record; undefined when absent or not a whole standing. */
export function standingFrom(v: unknown): PoolStandingRecord | undefined {
  if (!isObject(v) || typeof v.headroom !== 'number' || !(v.headroom >= 0 && v.headroom <= 1)) return undefined;
  const breaker = breakerFrom(v.breaker);
  if (!breaker) return undefined;
  const full = v.full;
  if (full !== undefined && full !== null) {
    if (!isObject(full) || !FULL_BY.includes(full.by as FullBy) || typeof full.detail !== 'string') return undefined;
    return { headroom: v.headroom, full: { by: full.by as FullBy, detail: full.detail }, breaker };
  }
  return { headroom: v.headroom, breaker };
}

/** Thrown: StoreError naming `what` when `standing` is not a whole standing. */
export function checkStanding(standing: PoolStandingRecord, what: string): void {
  if (standingFrom(standing) === undefined) {
    throw new StoreError(`${what}: standing must have a headroom from 0 to 1, a breaker state and, when full, what fills it`);
  }
}

/** The standing as the JSON both backends keep (undefined fields left out). */
export function standingJson(s: PoolStandingRecord): Record<string, unknown> {
  return { headroom: s.headroom, ...(s.full ? { full: { ...s.full } } : {}), breaker: { ...s.breaker } };
}

/** `{ standing }` when there is one, else nothing: spread into a launcher record. */
export const withStanding = (standing: PoolStandingRecord | undefined): { standing?: PoolStandingRecord } => (standing ? { standing } : {});
