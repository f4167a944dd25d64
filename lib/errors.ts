/**
 * The project's error classes, every one a {@link NodepoolError}, defined by area in
 * lib/errors/ and imported from here. Tell them apart with `instanceof`, never by message.
 * A `BuilderError` is an expected failure (WORK_FAIL); anything else reaching a job
 * boundary is a bug (WORK_EXCEPTION). Whether the same call may succeed when tried again is
 * a property of the error ({@link NodepoolError.retryable}, {@link isRetryable}), set by its
 * class (or, for a `CloudError`, where it is created).
 */
export { coerceError, isRetryable, NodepoolError } from './errors/nodepool-error.js';
export * from './errors/builder-errors.js';
export * from './errors/client-errors.js';
export * from './errors/cloud-errors.js';
export * from './errors/config-errors.js';
export * from './errors/gearman-errors.js';
export * from './errors/runtime-errors.js';
export * from './errors/store-errors.js';
export * from './errors/surface-errors.js';
