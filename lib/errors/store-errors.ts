/**
 * Errors of the state store: opening, reading and writing it (SQLite or ZooKeeper), records
 * that do not parse, and image data documents that cannot be imported.
 */
import { NodepoolError } from './nodepool-error.js';

/** Thrown when the state store cannot be opened, read or written. */
export class StoreError extends NodepoolError {}

/** Thrown when a conditional store update finds the record in another state. */
export class StateConflictError extends StoreError {
  constructor(readonly recordId: string, readonly actualState: string, message: string) {
    super(message);
  }
}

/**
 * Thrown when a stored record does not parse or does not validate (bad JSON, an unknown state,
 * no time, a field of the wrong type). Lists skip such records and name them in `listCorrupt`;
 * reading or updating one throws this; deleting it works as for any record.
 */
export class CorruptRecordError extends StoreError {
  constructor(readonly kind: string, readonly recordId: string, readonly reason: string) {
    super(`${kind} ${recordId} is corrupt: ${reason}`);
  }
}

/**
 * Thrown when ZooKeeper refuses or fails an operation of the ZooKeeper store. `code` is
 * ZooKeeper's error name (`NO_NODE`, `NODE_EXISTS`, `BAD_VERSION`, `NOT_EMPTY`,
 * `CONNECTION_LOSS`, `SESSION_EXPIRED`, `OPERATION_TIMEOUT`, …); `path` is the znode it concerns.
 */
export class ZooKeeperError extends StoreError {
  constructor(readonly code: string, message: string, readonly path?: string, options?: { cause?: unknown }) {
    super(message, options);
  }

  /** ZooKeeper could not be reached (see {@link isStoreUnreachable}): the same operation may succeed later. */
  override get retryable(): boolean {
    return UNREACHABLE_CODES.has(this.code);
  }
}

/** Thrown by an operation on a ZooKeeper store this process has closed (code `CONNECTION_LOSS`, as before): never worth retrying. */
export class ZooKeeperClosedError extends ZooKeeperError {
  override get retryable(): boolean {
    return false;
  }
}

/** ZooKeeper's answers that mean "not now" (the server is unreachable or the session is being replaced), not "no". */
const UNREACHABLE_CODES = new Set(['CONNECTION_LOSS', 'OPERATION_TIMEOUT', 'SESSION_EXPIRED']);

/**
 * True when `err` says the state store could not be reached (a ZooKeeper connection loss, an
 * operation with no answer, a session being replaced; a SQLite database another process kept
 * locked past the busy timeout, `SQLITE_BUSY`): the same write may succeed later. A store
 * this process closed is not unreachable: nothing will answer there again.
 */
export function isStoreUnreachable(err: unknown): boolean {
  if (err instanceof ZooKeeperError) return err.retryable;
  const code = err instanceof StoreError ? (err.cause as { code?: unknown } | undefined)?.code : undefined;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** One problem found in an image data document (lib/store/image-data.ts). */
export interface ImageDataProblem {
  /** Path of the field, e.g. `builds[3].state`; empty for the document itself. */
  path: string;
  message: string;
}

/** Problems an {@link InvalidImageDataError}'s message lists; the rest are counted. */
const MAX_PROBLEMS_SHOWN = 20;

/** Thrown when an image data document does not validate; nothing was written. */
export class InvalidImageDataError extends StoreError {
  readonly problems: readonly ImageDataProblem[];
  constructor(problems: ImageDataProblem[]) {
    const shown = problems.slice(0, MAX_PROBLEMS_SHOWN).map((p) => (p.path ? `${p.path}: ${p.message}` : p.message));
    if (problems.length > MAX_PROBLEMS_SHOWN) shown.push(`… and ${problems.length - MAX_PROBLEMS_SHOWN} more problem(s)`);
    super(`not valid image data:\n  ${shown.join('\n  ')}`);
    this.problems = problems;
  }
}

/** Thrown when an import would overwrite a record of the target or reuse an id it handed out; nothing was written. */
export class ImageDataConflictError extends StoreError {
  constructor(readonly recordId: string, message: string) {
    super(message);
  }
}
