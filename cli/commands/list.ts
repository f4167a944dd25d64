/**
 * `nodepool list [--detail] [--json]`: every node with Nodepool's columns (`ID, Provider,
 * Label, Server ID, Public IPv4, IPv6, State, Age, Locked`); `--detail` adds pool, hostname,
 * private address, AZ, port, launcher, allocation and hold.
 */
import { corruptJson, corruptLines, corruptRows } from '../../lib/status/corrupt.js';
import type { CorruptRecord } from '../../lib/store/corrupt.js';
import type { NodeRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { nodeColumns, nodeJson, nodeRows } from '../../lib/status/nodes.js';
import { renderTable } from '../../lib/status/table.js';
import { commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult } from './shared.js';
import { NODE_LOCK_PREFIX } from '../../lib/store/lock-names.js';

/** Options of {@link list}. */
export interface ListOptions extends CommandContext {
  detail?: boolean;
  /** Print the node records (with `locked` and `age`) as a JSON array. */
  json?: boolean;
}

/** Ids of nodes whose lock is held by a live session. */
export async function lockedNodeIds(store: Store): Promise<Set<string>> {
  const locks = await store.listLocks(NODE_LOCK_PREFIX);
  return new Set(locks.filter((l) => l.live).map((l) => l.resource.slice(NODE_LOCK_PREFIX.length)));
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
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    await withStore(config, async (store) => {
      const [nodes, locked, corrupt] = await Promise.all([store.listNodes(), lockedNodeIds(store), store.listCorrupt({ kinds: ['node'] })]);
      out.out(renderNodes(nodes, locked, (opts.now ?? Date.now)(), opts, corrupt));
    }, { readOnly: true });
    return EXIT.ok;
  });
}
