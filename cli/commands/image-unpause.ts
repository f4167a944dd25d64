/**
 * `nodepool image-unpause <diskimage> [--provider P]`: removes an operator pause
 * (`nodepool image-pause`). A `pause: true` in nodepool.yaml stays in force; the command says so.
 * The action is lib/actions/image-pause.ts `unpauseImage`.
 */
export { imageUnpause } from './image-pause.js';
