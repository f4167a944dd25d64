/**
 * The builder's expected failures: each is a {@link BuilderError}, which a job reports to its
 * submitter as WORK_FAIL (anything else reaching a job boundary is a bug: WORK_EXCEPTION).
 */
import { NodepoolError } from './nodepool-error.js';

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

/** Thrown when `disk-image-create` cannot start or exits non-zero. */
export class DibFailedError extends BuildCommandFailedError {}

/** Thrown when a build runs past its `build-timeout`. */
export class BuildTimeoutError extends BuilderError {}

/** Thrown when a build or upload is aborted because the builder is shutting down. */
export class AbortedError extends BuilderError {}

/** Thrown when a format conversion with qemu-img fails. */
export class ConversionError extends BuilderError {}

/** Thrown when an upload passed its provider's `image-upload-timeout` (it was aborted). */
export class UploadTimeoutError extends BuilderError {}

/** Thrown when a build's output is not a usable image (empty, cut, not its format): the build fails. */
export class BadBuildOutputError extends BuilderError {}

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

/**
 * Thrown when a provider's `post-upload-hook` (workers/builder/post-upload-hook.ts) does not
 * exit 0, cannot start, or times out: WORK_FAIL, and the image just made is deleted.
 */
export class PostUploadHookError extends BuilderError {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  constructor(message: string, details: { exitCode: number | null; signal: string | null; timedOut: boolean }, options?: { cause?: unknown }) {
    super(message, options);
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.timedOut = details.timedOut;
  }
}

/**
 * Thrown when a `builder: snapshot` build fails on its instance: it does not boot or answer
 * SSH, its setup exits non-zero or runs past `setup-timeout`, it does not power off, or its
 * disk cannot be snapshotted.
 */
export class SnapshotBuildError extends BuilderError {}
