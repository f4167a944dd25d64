/**
 * The HTTP status of an operator action's refusal (lib/actions/action-result.ts) in the write
 * API, and the audit result it counts as. Pure.
 */
import { isUnknown, type Refusal } from '../../../lib/actions/action-result.js';
import type { AuditResult } from '../../../lib/store/models.js';

/**
 * unknown-* 404; invalid-argument and not-confirmed 400; in-progress, paused, locked and
 * wrong-state 409 (the request was fine, the record's state is not); failed 502 (the cloud or
 * the launchers the action asked failed); timed-out 504; interrupted 503.
 */
export function refusalStatus(refusal: Refusal): number {
  if (isUnknown(refusal)) return 404;
  switch (refusal) {
    case 'invalid-argument':
    case 'not-confirmed':
      return 400;
    case 'in-progress':
    case 'paused':
    case 'locked':
    case 'wrong-state':
      return 409;
    case 'failed':
      return 502;
    case 'timed-out':
      return 504;
    default:
      return 503;
  }
}

/** How an answer of `status` is recorded: denied (401/403), ok (2xx), error (5xx), else refused. */
export function auditResult(status: number): AuditResult {
  if (status === 401 || status === 403) return 'denied';
  if (status >= 200 && status < 300) return 'ok';
  if (status >= 500) return 'error';
  return 'refused';
}
