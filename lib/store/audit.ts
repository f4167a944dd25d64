/**
 * The audit trail of web writes (issue 25 §1), the part every backend shares: checking a stored
 * entry, reading a list filter, and when to prune. Entries have 10-digit sequence ids; every
 * {@link AUDIT_PRUNE_EVERY}th entry written drops those more than {@link AUDIT_KEEP} older than it,
 * so the store keeps between AUDIT_KEEP and AUDIT_KEEP + AUDIT_PRUNE_EVERY entries and no write
 * scans the whole trail. Pure.
 */
import { StoreError } from '../errors.js';
import { Fields } from './corrupt.js';
import { AUDIT_RESULTS, type AuditOutcome, type AuditRecord, type AuditResult, type NewAuditRecord } from './models.js';

/** Audit entries every store keeps at least (older ones may go). */
export const AUDIT_KEEP = 10_000;

/** One prune every this many entries written. */
export const AUDIT_PRUNE_EVERY = 100;

/** How many entries `listAudit` answers when no limit is given. */
export const AUDIT_DEFAULT_LIMIT = 100;

/** An audit id: a 10-digit sequence. */
export const AUDIT_ID_RE = /^\d{10}$/;

/** The id of audit entry `seq`. */
export function formatAuditId(seq: number): string {
  return String(seq).padStart(10, '0');
}

/**
 * The highest sequence to drop once entry `seq` is written, or undefined when this write does
 * not prune (only every `every`th does, and only past `keep`).
 */
export function auditPruneUpTo(seq: number, keep = AUDIT_KEEP, every = AUDIT_PRUNE_EVERY): number | undefined {
  if (seq % every !== 0 || seq <= keep) return undefined;
  return seq - keep;
}

/** A checked `listAudit` filter. */
export interface AuditQuery {
  limit: number;
  /** Only entries with a smaller id (undefined: from the newest). */
  before: string | undefined;
}

/** Checks a `listAudit` filter. Thrown: StoreError for a limit that is not a positive integer or a `before` that is not an id. */
export function auditQuery(filter: { limit?: number; before?: string } = {}): AuditQuery {
  const limit = filter.limit ?? AUDIT_DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new StoreError(`listing audit entries: limit ${String(limit)} is not a positive integer`);
  if (filter.before !== undefined && !AUDIT_ID_RE.test(filter.before)) {
    throw new StoreError(`listing audit entries: before ${JSON.stringify(String(filter.before).slice(0, 40))} is not an audit id (10 digits)`);
  }
  return { limit, before: filter.before };
}

/** Checks a new entry before it is written. Thrown: StoreError naming the bad field. */
export function checkNewAudit(e: NewAuditRecord): void {
  const bad = auditProblem(e as unknown as Record<string, unknown>);
  if (bad) throw new StoreError(`recording an audit entry: ${bad}`);
}

/** Checks an outcome and the id it is written to. Thrown: StoreError naming what is wrong. */
export function checkAuditOutcome(id: string, o: AuditOutcome): void {
  const what = `completing audit entry ${JSON.stringify(String(id).slice(0, 40))}`;
  if (!AUDIT_ID_RE.test(id)) throw new StoreError(`${what}: not an audit id (10 digits)`);
  if (!Number.isSafeInteger(o.status)) throw new StoreError(`${what}: status is ${describe(o.status)}, expected an HTTP status`);
  if (o.result === ('attempted' as string) || !(AUDIT_RESULTS as readonly unknown[]).includes(o.result)) {
    const got = typeof o.result === 'string' ? JSON.stringify((o.result as string).slice(0, 20)) : describe(o.result);
    throw new StoreError(`${what}: result is ${got}, expected one of ${AUDIT_RESULTS.filter((r) => r !== 'attempted').join(', ')}`);
  }
  if (typeof o.message !== 'string') throw new StoreError(`${what}: message is ${describe(o.message)}, expected a string`);
}

/** A fresh audit entry from its stored fields (`time` in epoch ms). Thrown: CorruptRecordError naming the field. */
export function auditFromFields(id: string, j: Record<string, unknown>): AuditRecord {
  const bad = auditProblem(j);
  if (bad) new Fields(j, 'audit', id).fail(bad);
  return {
    id,
    time: j.time as number,
    user: j.user as string | null,
    role: j.role as string | null,
    authenticator: j.authenticator as string | null,
    action: j.action as string,
    target: j.target as string,
    method: j.method as string,
    path: j.path as string,
    status: j.status as number,
    result: j.result as AuditResult,
    message: j.message as string,
    remote: j.remote as string | null,
  };
}

const STRINGS = ['action', 'target', 'method', 'path', 'message'] as const;
const NULLABLE = ['user', 'role', 'authenticator', 'remote'] as const;

/** What is wrong with an entry's fields, or undefined. */
function auditProblem(j: Record<string, unknown>): string | undefined {
  if (typeof j.time !== 'number' || !Number.isFinite(j.time)) return `time is ${describe(j.time)}, expected a time`;
  for (const k of STRINGS) if (typeof j[k] !== 'string') return `${k} is ${describe(j[k])}, expected a string`;
  for (const k of NULLABLE) if (j[k] !== null && typeof j[k] !== 'string') return `${k} is ${describe(j[k])}, expected a string or null`;
  if (!Number.isSafeInteger(j.status)) return `status is ${describe(j.status)}, expected an HTTP status`;
  if (!(AUDIT_RESULTS as readonly unknown[]).includes(j.result)) {
    return `result is ${typeof j.result === 'string' ? JSON.stringify(j.result.slice(0, 20)) : describe(j.result)}, expected one of ${AUDIT_RESULTS.join(', ')}`;
  }
  return undefined;
}

function describe(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  return Array.isArray(v) ? 'a list' : typeof v;
}

/**
 * Refused write attempts, counted per source and minute, or per user and minute when a verified
 * token named one (issue 31 §3): one aggregate stands for every such attempt from one address
 * (or of one user) in one minute, so a storm of them costs one store write a minute and never
 * pushes an entry of the audit trail out.
 * Aggregates are kept apart from the trail, under the status key {@link REFUSALS_STATUS_KEY},
 * the newest {@link REFUSALS_KEEP}.
 */
export interface RefusalAggregate {
  /** The start of the minute (epoch ms). */
  minute: number;
  /**
   * The client's address (an IPv6 address's /64), or `(other)` past the sources one minute
   * tracks; for a user's minute, the one source it came from or `(several)`.
   */
  source: string;
  /** The user a verified token named (a role too weak or none, a bad body), else null. */
  user: string | null;
  /** Attempts refused. */
  count: number;
  /** Of which answered 429 (over the source's limit). */
  limited: number;
  /** First and last attempt (epoch ms). */
  first: number;
  last: number;
  /** Attempts by HTTP status answered, by reason (`no-token`, `bad-token`, `cross-origin`, …) and by `METHOD /path` (at most {@link REFUSAL_PATHS_KEPT}, escaped). */
  statuses: Record<string, number>;
  reasons: Record<string, number>;
  requests: Record<string, number>;
}

/** The status key the aggregates are stored under. */
export const REFUSALS_STATUS_KEY = 'web-audit-refusals';
/** Aggregates kept (one a source a minute). */
export const REFUSALS_KEEP = 500;
/** Distinct `METHOD /path` an aggregate names; the rest count under `(other)`. */
export const REFUSAL_PATHS_KEPT = 5;

/** The aggregates of a stored status value, oldest first; a malformed value or aggregate is left out (the count of those is `dropped`). Pure. */
export function refusalAggregatesFrom(value: unknown): { aggregates: RefusalAggregate[]; dropped: number } {
  const list = value !== null && typeof value === 'object' && Array.isArray((value as { aggregates?: unknown }).aggregates)
    ? (value as { aggregates: unknown[] }).aggregates : undefined;
  if (!list) return { aggregates: [], dropped: value === undefined ? 0 : 1 };
  const aggregates = list.filter(isAggregate);
  return { aggregates, dropped: list.length - aggregates.length };
}

function isAggregate(v: unknown): v is RefusalAggregate {
  if (v === null || typeof v !== 'object') return false;
  const a = v as Record<string, unknown>;
  const counts = (c: unknown): boolean => c !== null && typeof c === 'object' && !Array.isArray(c) && Object.values(c).every((n) => Number.isSafeInteger(n));
  return ['minute', 'count', 'limited', 'first', 'last'].every((k) => Number.isSafeInteger(a[k]))
    && typeof a.source === 'string' && (a.user === null || typeof a.user === 'string')
    && counts(a.statuses) && counts(a.reasons) && counts(a.requests);
}
