/**
 * The audit trail's records: one entry per write the web API was asked for. Times are epoch
 * milliseconds; records are plain JSON values.
 */

/** How a write through the web API ended (issue 25 §1). */
export const AUDIT_RESULTS = ['ok', 'refused', 'denied', 'error', 'attempted'] as const;
/**
 * `ok`: done; `refused`: the action refused (unknown, wrong state, …); `denied`: too weak a role
 * or none; `error`: it failed; `attempted` (status 0): the action was begun, written before it
 * runs and replaced by its outcome once it ended (Store.completeAudit); an entry left
 * `attempted` is one whose outcome could not be written.
 */
export type AuditResult = (typeof AUDIT_RESULTS)[number];

/**
 * One entry of the audit trail: every write the web API was asked for, who asked (as the
 * verified token says; `null` when no token verified), what, when, and how it ended. `id` is a
 * 10-digit sequence; entries are never changed, and the oldest go past the store's bound.
 */
export interface AuditRecord {
  id: string;
  time: number;
  user: string | null;
  role: string | null;
  authenticator: string | null;
  /** The action (`image-build`, `node-hold`, …). */
  action: string;
  /** What it names (`ubuntu-jammy`, `0000000012`, `ubuntu-jammy@cloud-a`). */
  target: string;
  method: string;
  path: string;
  /** The HTTP status answered. */
  status: number;
  result: AuditResult;
  /** The answer's sentence (never a token or secret). */
  message: string;
  /** The client's address. */
  remote: string | null;
}

/** What {@link AuditRecord} is made from (the store gives `id`). */
export type NewAuditRecord = Omit<AuditRecord, 'id'>;

/**
 * How an attempted action ended, written over its `attempted` entry (Store.completeAudit), so
 * that one action is one entry of the trail: its HTTP status, its result (never `attempted`
 * again) and its message. The entry keeps the rest, `time` included (when the action began).
 */
export interface AuditOutcome {
  status: number;
  result: Exclude<AuditResult, 'attempted'>;
  message: string;
}
