/** Errors of Gearman: the connection, gearmand's ERROR packets, undecodable packets, and job payloads. */
import { NodepoolError } from './nodepool-error.js';

/** Thrown when a Gearman connection fails or drops while a job depends on it. */
export class GearmanConnectionError extends NodepoolError {}

/** Thrown when gearmand answers with an ERROR packet (the code and text it sent). */
export class GearmanServerError extends NodepoolError {
  readonly code: string;
  constructor(code: string, message: string) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

/** Thrown when a Gearman packet cannot be decoded (bad magic, unknown type, cut or oversized). */
export class GearmanProtocolError extends NodepoolError {}

/**
 * Thrown by the server (server/image-lifecycle/job-results.ts) when a builder's WORK_COMPLETE
 * is not what the job contract says. Not retryable: the builder would send the same.
 */
export class BadPayloadError extends NodepoolError {}
