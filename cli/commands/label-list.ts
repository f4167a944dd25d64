/**
 * `nodepool label-list [--json]`: per label, its min-ready against the nodes that are ready,
 * allocated, in use and building, and the provider pools that serve it; under the table, the
 * labels no pool serves. The view is the web's `/api/label-list` (lib/status/list-views.ts).
 */
import { labelListView, viewJsonText, viewText } from '../../lib/status/list-views.js';
import { runListCommand, type ListCommandOptions } from './list-command.js';
import type { CommandResult } from './shared.js';

export { servingPools } from '../../lib/status/list-data.js';

/** Options of {@link labelList}. `json`: print the label summaries as a JSON array. */
export type LabelListOptions = ListCommandOptions;

/** Lists labels; exit 0, or 2 for a config error. */
export function labelList(opts: LabelListOptions): Promise<CommandResult> {
  return runListCommand(opts, {}, async (src) => {
    const view = await labelListView(src);
    return opts.json ? viewJsonText(view) : viewText(view);
  });
}
