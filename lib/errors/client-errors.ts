/**
 * Errors of the consumer library (lib/client/nodepool-client.ts, also behind `nodepool
 * request`). Tell them apart with `instanceof`; each one carries the id it is about. None is
 * retryable.
 */
import { NodepoolError } from './nodepool-error.js';

/** Base of the client's errors. */
export class ClientError extends NodepoolError {}

/** Thrown when a node id names no node record. */
export class NodeNotFoundError extends ClientError {
  constructor(readonly nodeId: string) {
    super(`node ${nodeId} not found`);
  }
}

/** Thrown when a request id names no request (never made, deleted, or its ephemeral session lapsed). */
export class RequestNotFoundError extends ClientError {
  constructor(readonly requestId: string) {
    super(`node request ${requestId} not found`);
  }
}

/** Thrown when a node is in a state the operation does not apply to (e.g. releasing a building node). */
export class NodeStateError extends ClientError {
  constructor(readonly nodeId: string, readonly state: string, message: string) {
    super(message);
  }
}

/** Thrown when another live session holds a node's lock. */
export class NodeLockedError extends ClientError {
  constructor(readonly nodeId: string) {
    super(`node ${nodeId} is locked by another session`);
  }
}

/** Thrown by `requestNodes` when the launchers failed the request; `reason` is theirs. */
export class RequestFailedError extends ClientError {
  constructor(readonly requestId: string, readonly reason: string | null) {
    super(`node request ${requestId} failed: ${reason ?? 'no reason recorded'}`);
  }
}

/** Thrown when a request was not fulfilled or failed in time. */
export class RequestTimeoutError extends ClientError {
  constructor(readonly requestId: string, readonly timeoutMs: number, readonly state: string) {
    super(`node request ${requestId} still ${state} after ${Math.round(timeoutMs / 1000)} s`);
  }
}

/** Thrown when `accept` is given a request that is not fulfilled. */
export class RequestStateError extends ClientError {
  constructor(readonly requestId: string, readonly state: string) {
    super(`node request ${requestId} is ${state}, not fulfilled`);
  }
}

/** Thrown when the client's store session lapsed or was closed (its locks and ephemeral requests are gone). */
export class SessionLostError extends ClientError {
  constructor(readonly sessionId: string) {
    super(`store session ${sessionId} is gone (lapsed or closed)`);
  }
}
