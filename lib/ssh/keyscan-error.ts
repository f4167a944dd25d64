/**
 * The error a host scan throws. It lives next to the scanners rather than in lib/errors.ts
 * because only host scanning uses it (lib/ssh, the static driver, the openstack driver's
 * host-key-checking).
 */
import { NodepoolError } from '../errors.js';

/** Why a host could not be scanned. */
export type HostScanFailure = 'unresolvable' | 'unreachable' | 'no-keys';

/** Thrown when a host cannot be resolved, does not answer in time, or offers no SSH host key. */
export class HostScanError extends NodepoolError {
  constructor(readonly host: string, readonly port: number, readonly failure: HostScanFailure, readonly detail: string, options?: { cause?: unknown }) {
    super(`${host}:${port}: ${detail}`, options);
  }
}
