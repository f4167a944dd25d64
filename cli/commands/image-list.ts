/**
 * `nodepool image-list [--json]`: every upload (`Build ID, Upload ID, Provider, Image,
 * Provider Image Name, Provider Image ID, State, Age`, plus `Progress` while any upload runs:
 * `1.2/3.4 GiB 45% 180 MiB/s`) and, under the table, which upload targets need attention
 * (paused, waiting, backing off after failures, validating, last failed validation; a failed
 * upload's reason by its first line). The view is the web's `/api/image-list` (lib/status/list-views.ts).
 */
import { uploadListView, viewJsonText, viewText } from '../../lib/status/list-views.js';
import { runListCommand, type ListCommandOptions } from './list-command.js';
import type { CommandResult } from './shared.js';

/**
 * Options of {@link imageList}. `json`: print `{ uploads, targets }` instead of the table: each
 * upload as stored, with `age` (seconds) and `transfer` (bytes sent and total, percent, rate;
 * null unless uploading); each target with `validation: {validating, lastFailure}`
 * (lib/status/validation.ts).
 */
export type ImageListOptions = ListCommandOptions;

/** Lists uploads (table or JSON); exit 0, or 2 for a config error. */
export function imageList(opts: ImageListOptions): Promise<CommandResult> {
  return runListCommand(opts, { readOnly: true, warnServer: true }, async (src) => {
    const view = await uploadListView(src);
    return opts.json ? viewJsonText(view) : viewText(view);
  });
}
