/**
 * `nodepool image-status [--json]` (Nodepool 11): per diskimage, whether its builds are
 * paused and whether a build request is waiting (`Image, Paused, Build Request, Build
 * Request Age`). The view is the web's `/api/image-status` (lib/status/list-views.ts).
 */
import { imageStatusView, viewJsonText, viewText } from '../../lib/status/list-views.js';
import { runListCommand, type ListCommandOptions } from './list-command.js';
import type { CommandResult } from './shared.js';

/** Options of {@link imageStatus}. `json`: print the statuses as a JSON array instead of the table. */
export type ImageStatusOptions = ListCommandOptions;

/** Lists diskimage statuses; exit 0, or 2 for a config error. */
export function imageStatus(opts: ImageStatusOptions): Promise<CommandResult> {
  return runListCommand(opts, {}, async (src) => {
    const view = await imageStatusView(src);
    return opts.json ? viewJsonText(view) : viewText(view);
  });
}
