/**
 * Text an operator gave (a reason for a hold, pin, revoke or pause) as it is stored and echoed:
 * one printable line, control characters escaped (lib/outside-text.ts), so a reason sent with
 * `\n` or ESC can neither forge a line in a log or an audit entry nor drive a terminal that
 * lists it.
 */
import { escapeControlChars } from '../outside-text.js';

/** `reason` with its control characters escaped; undefined stays undefined. Pure. */
export function storedReason(reason: string | undefined): string | undefined {
  return reason === undefined ? undefined : escapeControlChars(reason);
}
