/**
 * Errors of clouds and hosts: a cloud call that failed (and whether it may work later), a
 * connection reset the HTTP client retries, a launch over quota or failed, a host that cannot
 * be scanned, an image a driver refuses, and a label template that does not format.
 */
import { NodepoolError } from './nodepool-error.js';

/** Options of a {@link CloudError}. */
export interface CloudErrorOptions {
  cause?: unknown;
  /** The HTTP status the cloud answered, if it answered. */
  status?: number;
  /**
   * Whether the same call may work later. Default: when the cloud did not answer (a dropped
   * connection, no answer in time), answered 5xx, or 429 (too many requests); a rejection
   * (another 4xx) would fail again. An aborted call says `false`.
   */
  retryable?: boolean;
}

/**
 * Thrown when a cloud fails a call or answers something unusable (an expected failure, with
 * the cloud's words): the builder reports it as WORK_FAIL, a launch as the node's reason.
 */
export class CloudError extends NodepoolError {
  readonly status: number | undefined;
  private readonly transient: boolean;
  constructor(message: string, options?: CloudErrorOptions) {
    super(message, options);
    this.status = options?.status;
    this.transient = options?.retryable ?? (this.status === undefined || this.status >= 500 || this.status === 429);
  }

  override get retryable(): boolean {
    return this.transient;
  }
}

/**
 * Raised inside the OpenStack HTTP client (lib/drivers/openstack/http-client.ts) when a
 * connection was reset or closed mid-answer; the client tries a GET or HEAD once more. `error`
 * is what the caller sees when the call is not tried again. Retryable.
 */
export class ResetError extends NodepoolError {
  constructor(readonly error: CloudError) {
    super(error.message);
  }

  override get retryable(): boolean {
    return true;
  }
}

/** Thrown by a node launch when the cloud is over quota: the node becomes `aborted` and is retried, not failed. */
export class QuotaExceededError extends NodepoolError {}

/** Thrown by a node launch that failed (the node becomes `failed` with this message). */
export class LaunchError extends NodepoolError {}

/** Why a host could not be scanned. */
export type HostScanFailure = 'unresolvable' | 'unreachable' | 'no-keys';

/** Thrown when a host cannot be resolved, does not answer in time, or offers no SSH host key. */
export class HostScanError extends NodepoolError {
  constructor(readonly host: string, readonly port: number, readonly failure: HostScanFailure, readonly detail: string, options?: { cause?: unknown }) {
    super(`${host}:${port}: ${detail}`, options);
  }
}

/**
 * Thrown by the qemu driver (lib/drivers/qemu/qemu-img.ts) when an image file is not a sound
 * image of its claimed format (the reason in qemu-img's words). Not retryable: the file is bad.
 */
export class BadImageError extends NodepoolError {}

/**
 * Thrown by `formatTemplate` (lib/drivers/openstack/dynamic-properties.ts) where Python would
 * raise (KeyError, AttributeError, ValueError…). Not retryable: the template or request is wrong.
 */
export class TemplateError extends NodepoolError {}
