/**
 * The builder's defaults, written once: BaseBuilder, its build methods, its helper programs and
 * bin/nodepool-builder.ts's options take them from here (Temporal's compiled worker options).
 */

/** What a builder uses when its options do not say otherwise. */
export const BUILDER_DEFAULTS = {
  /** The name the builder reports when none is given (bin/ passes os.hostname()). */
  hostname: 'localhost',
  /** Concurrent builds on this host (`--build-workers`). */
  buildWorkers: 1,
  /** Concurrent uploads and deletes (`--upload-workers`). */
  uploadWorkers: 4,
  /** Seconds a stop lets running jobs finish before aborting them (`--shutdown-timeout`). */
  shutdownTimeoutS: 30,
  /** After SIGTERM to a build's process group (DIB or a build command), SIGKILL follows after this long. */
  buildKillGraceMs: 10_000,
  /** After SIGTERM to a helper's process group (qemu-img, a post-upload-hook), SIGKILL follows after this long. */
  helperKillGraceMs: 5000,
  /** Wait before an upload's second attempt after a retryable cloud error (doubling after). */
  uploadRetryDelayMs: 5000,
  /** The qemu-img program. */
  qemuImg: 'qemu-img',
} as const;
