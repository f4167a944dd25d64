/**
 * Nodepool's names for launch results (its statsd keys `nodepool.launch.<result>`): `ready`,
 * `error.quota` for a launch aborted over quota, and `error.unknown` for a failed one (the
 * reason is a message, not a classified error). Pure.
 */
import type { LaunchOutcome } from '../launcher/request-handler-types.js';

/** The result name of a launch outcome. */
export function launchResult(result: LaunchOutcome['result']): 'ready' | 'error.quota' | 'error.unknown' {
  if (result === 'ready') return 'ready';
  return result === 'aborted' ? 'error.quota' : 'error.unknown';
}
