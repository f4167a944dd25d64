/**
 * An operator's reason (pin, revoke, pause, hold), checked once for the CLI and the web alike
 * (issue 31 §10): given, it must say something; a blank one is refused rather than stored as a
 * reason that reads as none. Absent is fine (no reason).
 */
import { refuse, type Refused } from './action-result.js';

/** A refusal for a reason that is empty or only blanks; undefined when it is absent or says something. */
export function blankReason(reason: string | undefined): Refused<'invalid-argument'> | undefined {
  if (reason === undefined || reason.trim() !== '') return undefined;
  return refuse('invalid-argument', 'The reason must not be empty or blank; leave it out to give none');
}
