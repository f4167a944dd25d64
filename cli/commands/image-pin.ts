/**
 * `nodepool image-pin <diskimage> <build-id> [--provider P] [--reason TEXT]`: launches of the
 * diskimage (on that provider, or everywhere) boot that build's upload, whatever is newer,
 * until `nodepool image-unpin <diskimage> [--provider P]`. The actions are
 * lib/actions/image-pin.ts `pinImage` and `unpinImage`.
 */
import { pinImage, unpinImage } from '../../lib/actions/image-pin.js';
import type { CommandContext, CommandResult } from './shared.js';
import { runActionCommand } from './action-refusal.js';

/** Options of {@link imagePin}. */
export interface ImagePinOptions extends CommandContext {
  diskimage: string;
  buildId: string;
  /** Pin only the launches on this provider. */
  provider?: string;
  reason?: string;
}

/**
 * Pins a diskimage's launches to a build; exit 0, 3 for an unknown diskimage, provider or build
 * (or a build of another diskimage), 1 for a build that cannot serve (revoked, being deleted,
 * no ready upload there).
 */
export function imagePin(opts: ImagePinOptions): Promise<CommandResult> {
  return runActionCommand(opts, (ctx) => pinImage(ctx, { diskimage: opts.diskimage, buildId: opts.buildId, provider: opts.provider, reason: opts.reason }));
}

/** Removes a pin (saying so when there was none); exit 0, or 3 for an unknown diskimage or provider. */
export function imageUnpin(opts: Omit<ImagePinOptions, 'buildId' | 'reason'>): Promise<CommandResult> {
  return runActionCommand(opts, (ctx) => unpinImage(ctx, { diskimage: opts.diskimage, provider: opts.provider }));
}
