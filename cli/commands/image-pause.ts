/**
 * `nodepool image-pause <diskimage> [--provider P] [--reason TEXT]`: an operator pause of a
 * diskimage's builds, or of its uploads to one provider. The server skips paused work (and
 * `image-build` refuses) until `nodepool image-unpause`. The actions are
 * lib/actions/image-pause.ts `pauseImage` and `unpauseImage`.
 */
import { pauseImage, unpauseImage, type ImagePauseResult } from '../../lib/actions/image-pause.js';
import type { Config } from '../../lib/config/schema.js';
import type { Store } from '../../lib/store/store.js';
import {
  commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';
import { settled } from './action-refusal.js';

/** Options of {@link imagePause} and `imageUnpause`. */
export interface ImagePauseOptions extends CommandContext {
  diskimage: string;
  /** Pause only the uploads to this provider. */
  provider?: string;
  reason?: string;
}

/** Runs a pause action and prints its message and warnings; exit 0, or 3 for an unknown diskimage or provider. */
export function runPauseAction(opts: CommandContext, action: (ctx: { store: Store; config: Config }) => Promise<ImagePauseResult>): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const { message, warnings } = settled(await withStore(config, (store) => action({ store, config })));
    out.out(`${message}\n`);
    for (const w of warnings) out.err(`warning: ${w}\n`);
    return EXIT.ok;
  });
}

/** Pauses builds, or uploads to one provider; exit 0, or 3 for an unknown diskimage or provider. */
export function imagePause(opts: ImagePauseOptions): Promise<CommandResult> {
  return runPauseAction(opts, (ctx) => pauseImage(ctx, { diskimage: opts.diskimage, provider: opts.provider, reason: opts.reason }));
}

/** Removes an operator pause; exit 0, or 3 for an unknown diskimage or provider. */
export function imageUnpause(opts: Omit<ImagePauseOptions, 'reason'>): Promise<CommandResult> {
  return runPauseAction(opts, (ctx) => unpauseImage(ctx, { diskimage: opts.diskimage, provider: opts.provider }));
}
