/**
 * The project's error classes. Tell them apart with `instanceof`, never by message.
 * A `BuilderError` is an expected failure (WORK_FAIL); anything else reaching a job
 * boundary is a bug (WORK_EXCEPTION). Whether the same call may succeed when tried again is
 * a property of the error ({@link NodepoolError.retryable}, {@link isRetryable}), set where
 * it is created.
 */

/**
 * Base of every error this project throws on purpose; never thrown itself. Not retryable
 * unless a subclass says so.
 */
export class NodepoolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /** Whether the same call may succeed when tried again (a transient failure, not a "no"). */
  get retryable(): boolean {
    return false;
  }
}

/** True when `err` is one of ours and says trying again may work ({@link NodepoolError.retryable}). */
export function isRetryable(err: unknown): boolean {
  return err instanceof NodepoolError && err.retryable;
}

/** One problem found in a configuration file. */
export interface ConfigProblem {
  /** Dotted key path with array indexes, e.g. `providers[1].pools[0].max-servers`. */
  path: string;
  message: string;
}

/** Thrown when a configuration file cannot be read or does not validate. */
export class ConfigError extends NodepoolError {
  readonly file: string;
  readonly problems: readonly ConfigProblem[];
  constructor(file: string, problems: ConfigProblem[], options?: { cause?: unknown }) {
    super(problems.map((p) => `${file}: ${p.path ? `${p.path}: ` : ''}${p.message}`).join('\n'), options);
    this.file = file;
    this.problems = problems;
  }
}

/**
 * An expected builder failure, thrown as one of its subclasses (or directly for a failure
 * that has none, e.g. a missing image file): reported to the submitter as WORK_FAIL.
 */
export class BuilderError extends NodepoolError {}

/** Thrown when a job's payload or id is malformed. */
export class InvalidJobError extends BuilderError {}

/** Thrown when a job names a diskimage, provider or image id this builder does not know. */
export class UnknownImageError extends BuilderError {}

/** Thrown when a build command (DIB or a `builder: command` program) cannot start or exits non-zero. */
export class BuildCommandFailedError extends BuilderError {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly logPath: string;
  constructor(message: string, details: { exitCode: number | null; signal: string | null; logPath: string }) {
    super(message);
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.logPath = details.logPath;
  }
}

/**
 * Thrown by `runCommand` with `check` (lib/run-command.ts) when a helper program (qemu-img,
 * genisoimage, …) cannot start, exits non-zero or runs past its time limit.
 */
export class CommandFailedError extends NodepoolError {
  constructor(readonly command: string, readonly exitCode: number | null, readonly stderr: string, message: string) {
    super(message);
  }
}

/** Thrown when `disk-image-create` cannot start or exits non-zero. */
export class DibFailedError extends BuildCommandFailedError {}

/** Thrown when a build runs past its `build-timeout`. */
export class BuildTimeoutError extends BuilderError {}

/** Thrown when a build or upload is aborted because the builder is shutting down. */
export class AbortedError extends BuilderError {}

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

/** Thrown when a format conversion with qemu-img fails. */
export class ConversionError extends BuilderError {}

/** Thrown when an upload passed its provider's `image-upload-timeout` (it was aborted). */
export class UploadTimeoutError extends BuilderError {}

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

/** Turns anything thrown into an Error, keeping Errors as they are. */
export function coerceError(err: unknown): Error {
  if (err instanceof Error) return err;
  if (typeof err === 'string') return new Error(err);
  try {
    return new Error(JSON.stringify(err));
  } catch {
    return new Error(String(err));
  }
}

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

/** Thrown when a build's output is not a usable image (empty, cut, not its format): the build fails. */
export class BadBuildOutputError extends BuilderError {}


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

/**
 * Thrown when an image file's bytes are no longer those recorded when it was built (its size or
 * the sha256 of the bytes streamed to the cloud differ): the upload is refused and removed.
 */
export class ImageFileChangedError extends BuilderError {}

/**
 * Thrown when the cloud's own hash of an uploaded image differs from the hash of the bytes the
 * builder sent (corrupted on the way or in the store): the image is deleted in the cloud.
 */
export class CloudHashMismatchError extends BuilderError {}
