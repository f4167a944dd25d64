/**
 * `nodepool image-unpin <diskimage> [--provider P]`: removes a pin (`nodepool image-pin`); a
 * diskimage-wide unpin says which providers' own pins stay. The action is
 * lib/actions/image-pin.ts `unpinImage`.
 */
export { imageUnpin } from './image-pin.js';
