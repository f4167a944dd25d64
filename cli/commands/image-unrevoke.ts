/**
 * `nodepool image-unrevoke <build-id>`: undoes `nodepool image-revoke`, and starts a new canary
 * for the build's uploads a failed canary revoked. The action is lib/actions/image-revoke.ts
 * `unrevokeBuild`.
 */
export { imageUnrevoke } from './image-revoke.js';
