/**
 * `nodepool hold <id> [--reason TEXT] [--expire SECONDS]`: keeps a ready or in-use node out of
 * reach of requests and the deleter until `nodepool release` (or until it expires, or
 * `max-hold-age` passes). The action is lib/actions/node-hold.ts `holdNode`.
 */
import { holdNode } from '../../lib/actions/node-hold.js';
import { renderNodes } from './list.js';
import { commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult } from './shared.js';
import { settled } from './action-refusal.js';

/** Options of {@link hold}. */
export interface HoldOptions extends CommandContext {
  id: string;
  /** Why (shown by `list --detail`); default `held with nodepool hold`. */
  reason?: string;
  /** Seconds until the launcher deletes the held node. */
  expireSeconds?: number;
  json?: boolean;
}

/** Holds a node; exit 0, 1 when its state does not allow it, 3 for an unknown node. */
export function hold(opts: HoldOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    if (opts.expireSeconds !== undefined && !(opts.expireSeconds > 0)) {
      out.err(`--expire must be a positive number of seconds, got ${opts.expireSeconds}\n`);
      return EXIT.usage;
    }
    const { node } = settled(await withStore(config, (store) =>
      holdNode({ store, config }, { nodeId: opts.id, reason: opts.reason, expireSeconds: opts.expireSeconds })));
    out.out(renderNodes([node], new Set(), (opts.now ?? Date.now)(), { detail: true, json: opts.json }));
    return EXIT.ok;
  });
}
