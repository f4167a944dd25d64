/**
 * `nodepool request-list [--json]`: node requests by priority, then age (`Request ID,
 * Priority, State, Requestor, Node Types, Nodes, Declined By, Age`).
 */
import { REQUEST_COLUMNS, requestJson, requestRows } from '../../lib/status/requests.js';
import { corruptJson, corruptLines, corruptRows } from '../../lib/status/corrupt.js';
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
    const [requests, corrupt] = await withStore(config, (store) => Promise.all([store.listRequests(), store.listCorrupt({ kinds: ['request'] })]), { readOnly: true });
    const now = (opts.now ?? Date.now)();
    if (opts.json) {
      out.out(`${JSON.stringify([...requests.map((r) => requestJson(r, now)), ...corruptJson(corrupt, ['request'])], null, 2)}\n`);
    } else {
      out.out(renderTable(REQUEST_COLUMNS, [...requestRows(requests, now), ...corruptRows(REQUEST_COLUMNS, corrupt, ['request'])]));
      for (const line of corruptLines(corrupt, ['request'])) out.out(`${line}\n`);
    }
    return EXIT.ok;
  });
}
