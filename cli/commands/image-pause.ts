/**
 * `nodepool image-pause <diskimage> [--provider P] [--reason TEXT]`: an operator pause of a
 * diskimage's builds, or of its uploads to one provider. The server skips paused work (and
 * `image-build` refuses) until `nodepool image-unpause`.
 */
import type { Config } from '../../lib/config/schema.js';
import { imageTarget } from '../../lib/drivers/config-registry.js';
import {
  commandConfig, CommandFailure, EXIT, requireDiskimage, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';

/** Options of {@link imagePause} and `imageUnpause`. */
export interface ImagePauseOptions extends CommandContext {
  diskimage: string;
  /** Pause only the uploads to this provider. */
  provider?: string;
  reason?: string;
}

/**
 * Checks the diskimage and provider against the config; returns whether nodepool.yaml pauses
 * the same thing already. Thrown: CommandFailure (exit 3) for an unknown name.
 */
export function pausedByConfig(config: Config, diskimage: string, provider: string | undefined): boolean {
  const d = requireDiskimage(config, diskimage);
  if (provider === undefined) return d.pause;
  const p = config.providers.find((x) => x.name === provider);
  if (!p) throw new CommandFailure(EXIT.notFound, `Provider ${provider} not found in ${config.file}`);
  const pd = imageTarget(p, diskimage);
  if (!pd) throw new CommandFailure(EXIT.notFound, `Provider ${provider} does not list diskimage ${diskimage}`);
  return pd.pause;
}

/** `Builds of X` or `Uploads of X to P`. */
export function pauseSubject(diskimage: string, provider: string | undefined): string {
  return provider === undefined ? `Builds of ${diskimage}` : `Uploads of ${diskimage} to ${provider}`;
}

/** Records or removes an operator pause. */
export function setImagePause(opts: ImagePauseOptions, paused: boolean): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const byConfig = pausedByConfig(config, opts.diskimage, opts.provider);
    const provider = opts.provider ?? null;
    const wasPaused = await withStore(config, async (store) => {
      const before = (await store.listPauses()).some((p) => p.diskimage === opts.diskimage && p.provider === provider);
      await store.setPause(opts.diskimage, provider, paused, paused ? opts.reason : undefined);
      return before;
    });
    const subject = pauseSubject(opts.diskimage, opts.provider);
    if (paused) {
      out.out(`${subject} paused${opts.reason ? ` (${opts.reason})` : ''}\n`);
    } else {
      // Only an operator pause is removed; say so when there was none rather than claim an unpause.
      out.out(wasPaused ? `${subject} unpaused\n` : `${subject} were not paused by an operator; nothing to unpause\n`);
      if (byConfig) out.err(`warning: ${config.file} still pauses them (pause: true)\n`);
    }
    return EXIT.ok;
  });
}

/** Pauses builds, or uploads to one provider; exit 0, or 3 for an unknown diskimage or provider. */
export function imagePause(opts: ImagePauseOptions): Promise<CommandResult> {
  return setImagePause(opts, true);
}
