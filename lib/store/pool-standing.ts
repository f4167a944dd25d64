/**
 * A launcher registration's `standing` (ours, issue 35), checked the same in every backend:
 * written only when whole and sane, read back as nothing when it is not (a pool whose
 * standing cannot be read is placed as one that has told nothing, never a stopped loop).
 */
import type { BreakerState } from '../fleet/breaker.js';
import { StoreError } from '../errors.js';
import type { FullBy, PoolStandingRecord, TenantLimitedRecord } from './session-records.js';

const FULL_BY: readonly FullBy[] = ['max-servers', 'cloud-quota', 'tenant-limit'];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isCount = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

/** The breaker state in `v`, or undefined when it is not one. */
export function breakerFrom(v: unknown): BreakerState | undefined {
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

/** At most this many labels or tenants in a standing (more is not a standing a launcher wrote). */
const MAX_ENTRIES = 10_000;

/** The strings in `v` (absent: none), or undefined when it is not a list of them. */
function labelsFrom(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > MAX_ENTRIES || !v.every((x) => typeof x === 'string')) return undefined;
  return [...v as string[]];
}

/** The tenant entries in `v` (absent: none), or undefined when it is not a list of them. */
function tenantsFrom(v: unknown): TenantLimitedRecord[] | undefined {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > MAX_ENTRIES) return undefined;
  const out: TenantLimitedRecord[] = [];
  for (const t of v) {
    if (!isObject(t) || typeof t.tenant !== 'string' || typeof t.detail !== 'string') return undefined;
    out.push({ tenant: t.tenant, detail: t.detail });
  }
  return out;
}

/** The standing in `v` (a parsed JSON value), as a fresh record; undefined when absent or not a whole standing. */
export function standingFrom(v: unknown): PoolStandingRecord | undefined {
  if (!isObject(v) || typeof v.headroom !== 'number' || !(v.headroom >= 0 && v.headroom <= 1)) return undefined;
  const breaker = breakerFrom(v.breaker);
  const noReadyImage = labelsFrom(v.noReadyImage);
  const tenantLimited = tenantsFrom(v.tenantLimited);
  if (!breaker || !noReadyImage || !tenantLimited) return undefined;
  const full = v.full;
  let fullRecord: PoolStandingRecord['full'];
  if (full !== undefined && full !== null) {
    if (!isObject(full) || !FULL_BY.includes(full.by as FullBy) || typeof full.detail !== 'string') return undefined;
    fullRecord = { by: full.by as FullBy, detail: full.detail };
  }
  return {
    headroom: v.headroom, ...(fullRecord ? { full: fullRecord } : {}), breaker,
    ...(noReadyImage.length ? { noReadyImage } : {}), ...(tenantLimited.length ? { tenantLimited } : {}),
  };
}

/** Thrown: StoreError naming `what` when `standing` is not a whole standing. */
export function checkStanding(standing: PoolStandingRecord, what: string): void {
  if (standingFrom(standing) === undefined) {
    throw new StoreError(`${what}: standing must have a headroom from 0 to 1, a breaker state, when full what fills it, and only label names in noReadyImage and tenant/detail pairs in tenantLimited`);
  }
}

/** The standing as the JSON both backends keep (undefined fields left out). */
export function standingJson(s: PoolStandingRecord): Record<string, unknown> {
  return {
    headroom: s.headroom, ...(s.full ? { full: { ...s.full } } : {}), breaker: { ...s.breaker },
    ...(s.noReadyImage?.length ? { noReadyImage: [...s.noReadyImage] } : {}),
    ...(s.tenantLimited?.length ? { tenantLimited: s.tenantLimited.map((t) => ({ ...t })) } : {}),
  };
}

/** `{ standing }` when there is one, else nothing: spread into a launcher record. */
export const withStanding = (standing: PoolStandingRecord | undefined): { standing?: PoolStandingRecord } => (standing ? { standing } : {});
