/**
 * `nodepool list [--detail] [--json]`: every node with Nodepool's columns (`ID, Provider,
 * Label, Server ID, Public IPv4, IPv6, State, Age, Locked`); `--detail` adds pool, hostname,
 * private address, AZ, port, launcher, allocation and hold. The view is the web's
 * `/api/node-list` (lib/status/list-views.ts); {@link renderNodes} prints the nodes an
 * action returns (hold, release, delete, request) the same way.
 */
import { corruptJson, corruptLines, corruptRows } from '../../lib/status/corrupt.js';
import { nodeListView, viewJsonText, viewText } from '../../lib/status/list-views.js';
import type { CorruptRecord } from '../../lib/store/corrupt.js';
import type { NodeRecord } from '../../lib/store/models.js';
import { nodeColumns, nodeJson, nodeRows } from '../../lib/status/nodes.js';
import { renderTable } from '../../lib/status/table.js';
import { runListCommand, type ListCommandOptions } from './list-command.js';
import type { CommandResult } from './shared.js';

export { lockedNodeIds } from '../../lib/status/list-data.js';

/** Options of {@link list}. `json`: print the node records (with `locked` and `age`) as a JSON array. */
export interface ListOptions extends ListCommandOptions {
  detail?: boolean;
}

/**
 * Nodes as the `list` table or its JSON array; corrupt node records (`corrupt`) follow as rows
 * in state `corrupt`, each with a line under the table saying why and how to remove it.
 */
export function renderNodes(nodes: readonly NodeRecord[], locked: ReadonlySet<string>, now: number,
  opts: { detail?: boolean; json?: boolean }, corrupt: readonly CorruptRecord[] = []): string {
  if (opts.json) return `${JSON.stringify([...nodes.map((n) => nodeJson(n, locked.has(n.id), now)), ...corruptJson(corrupt, ['node'])], null, 2)}\n`;
  const detail = opts.detail ?? false;
  const columns = nodeColumns(detail);
  const table = renderTable(columns, [...nodeRows(nodes, locked, now, detail), ...corruptRows(columns, corrupt, ['node'])]);
  return table + corruptLines(corrupt, ['node']).map((l) => `${l}\n`).join('');
}

/** Lists nodes (table or JSON); exit 0, or 2 for a config error. */
export function list(opts: ListOptions): Promise<CommandResult> {
  return runListCommand(opts, { readOnly: true }, async (src) => {
    const view = await nodeListView(src, { detail: opts.detail });
    return opts.json ? viewJsonText(view) : viewText(view);
  });
}
