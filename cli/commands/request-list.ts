/**
 * `nodepool request-list [--json]`: node requests by priority, then age (`Request ID,
 * Priority, State, Requestor, Node Types, Nodes, Declined By, Age`).
 */
import { REQUEST_COLUMNS, requestJson, requestRows } from '../../lib/status/requests.js';
import { renderTable } from '../../lib/status/table.js';
import { commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult } from './shared.js';

/** Options of {@link requestList}. */
export interface RequestListOptions extends CommandContext {
  /** Print the request records (with `age`) as a JSON array. */
  json?: boolean;
}

/** Lists node requests; exit 0, or 2 for a config error. */
export function requestList(opts: RequestListOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const requests = await withStore(config, (store) => store.listRequests());
    const now = (opts.now ?? Date.now)();
    if (opts.json) out.out(`${JSON.stringify(requests.map((r) => requestJson(r, now)), null, 2)}\n`);
    else out.out(renderTable(REQUEST_COLUMNS, requestRows(requests, now)));
    return EXIT.ok;
  });
}
