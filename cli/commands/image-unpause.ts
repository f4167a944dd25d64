/**
 * `nodepool image-unpause <diskimage> [--provider P]`: removes an operator pause
 * (`nodepool image-pause`). A `pause: true` in nodepool.yaml stays in force; the command says so.
 */
import { setImagePause, type ImagePauseOptions } from './image-pause.js';
import type { CommandResult } from './shared.js';

/** Removes an operator pause; exit 0, or 3 for an unknown diskimage or provider. */
export function imageUnpause(opts: Omit<ImagePauseOptions, 'reason'>): Promise<CommandResult> {
  return setImagePause(opts, false);
}
