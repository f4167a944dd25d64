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
