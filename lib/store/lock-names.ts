/**
 * Lock resource names, shared by every store backend and every component that locks a node or
 * a node request (launcher, deleter, consumers, CLI).
 */

export const NODE_LOCK_PREFIX = 'node:';
export const REQUEST_LOCK_PREFIX = 'request:';

/** Lock resource name of a node. */
export const nodeLock = (id: string): string => `${NODE_LOCK_PREFIX}${id}`;

/** Lock resource name of a node request. */
export const requestLock = (id: string): string => `${REQUEST_LOCK_PREFIX}${id}`;

export const UPLOAD_VALIDATION_LOCK_PREFIX = 'upload-validation:';

/**
 * Lock resource name of an upload's validation: the launcher that holds it (under its
 * session) is the only one validating that upload, so two hosts never boot two validation nodes.
 */
export const uploadValidationLock = (uploadId: string): string => `${UPLOAD_VALIDATION_LOCK_PREFIX}${uploadId}`;

export const FLEET_POOL_LOCK_PREFIX = 'fleet-pool:';

/**
 * Lock resource name of a provider-pool's lease in a launcher fleet (`<provider>/<pool>`): the
 * fleet member that holds it (under its session) is the only one running that pool.
 */
export const fleetPoolLock = (poolKey: string): string => `${FLEET_POOL_LOCK_PREFIX}${poolKey}`;
