/**
 * `nodepool image-pause <diskimage> [--provider P] [--reason TEXT]`: an operator pause of a
 * diskimage's builds, or of its uploads to one provider. The server skips paused work (and
 * `image-build` refuses) until `nodepool image-unpause`. The actions are
 * lib/actions/image-pause.ts `pauseImage` and `unpauseImage`.
 */
import { pauseImage, unpauseImage } from '../../lib/actions/image-pause.js';
import type { CommandContext, CommandResult } from './shared.js';
import { runActionCommand } from './action-refusal.js';

/** Options of {@link imagePause} and `imageUnpause`. */
export interface ImagePauseOptions extends CommandContext {
  diskimage: string;
  /** Pause only the uploads to this provider. */
  provider?: string;
  reason?: string;
}

/** Pauses builds, or uploads to one provider; exit 0, or 3 for an unknown diskimage or provider. */
export function imagePause(opts: ImagePauseOptions): Promise<CommandResult> {
  return runActionCommand(opts, (ctx) => pauseImage(ctx, { diskimage: opts.diskimage, provider: opts.provider, reason: opts.reason }));
}

/** Removes an operator pause; exit 0, or 3 for an unknown diskimage or provider. */
export function imageUnpause(opts: Omit<ImagePauseOptions, 'reason'>): Promise<CommandResult> {
  return runActionCommand(opts, (ctx) => unpauseImage(ctx, { diskimage: opts.diskimage, provider: opts.provider }));
}
