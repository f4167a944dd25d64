/**
 * An operator's reason (pin, revoke, pause, hold), checked and stored once for the CLI and the
 * web alike (issue 31 §5, §10): given, it must say something (a blank one is refused rather than
 * stored as a reason that reads as none; absent is fine); stored, it is one printable line,
 * control characters escaped (lib/outside-text.ts), so a reason sent with `\n` or ESC can neither
 * forge a line in a log or an audit entry nor drive a terminal that lists it.
 */
import { escapeControlChars } from '../outside-text.js';
import { refuse, type Refused } from './action-result.js';

/** A refusal for a reason that is empty or only blanks; undefined when it is absent or says something. */
export function blankReason(reason: string | undefined): Refused<'invalid-argument'> | undefined {
  if (reason === undefined || reason.trim() !== '') return undefined;
  return refuse('invalid-argument', 'The reason must not be empty or blank; leave it out to give none');
}

/** `reason` with its control characters escaped; undefined stays undefined. Pure. */
export function storedReason(reason: string | undefined): string | undefined {
  return reason === undefined ? undefined : escapeControlChars(reason);
}
