/**
 * The records the state store keeps. Times are epoch milliseconds. Records are plain JSON
 * values (no classes), so every backend can store them as they are. Each kind lives in its own
 * module; this one re-exports them all, so importers keep one path.
 */

export * from './image-records.js';
export * from './node-records.js';
export * from './audit-records.js';
export * from './session-records.js';
