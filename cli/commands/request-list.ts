/**
 * `nodepool request-list [--json]`: node requests by priority, then age (`Request ID,
 * Priority, State, Requestor, Node Types, Nodes, Declined By, Age`). The view is the web's
 * `/api/request-list` (lib/status/list-views.ts).
 */
import { requestListView, viewJsonText, viewText } from '../../lib/status/list-views.js';
import { runListCommand, type ListCommandOptions } from './list-command.js';
import type { CommandResult } from './shared.js';

/** Options of {@link requestList}. `json`: print the request records (with `age`) as a JSON array. */
export type RequestListOptions = ListCommandOptions;

/** Lists node requests; exit 0, or 2 for a config error. */
export function requestList(opts: RequestListOptions): Promise<CommandResult> {
  return runListCommand(opts, { readOnly: true }, async (src) => {
    const view = await requestListView(src);
    return opts.json ? viewJsonText(view) : viewText(view);
  });
}
