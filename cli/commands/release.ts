/**
 * `nodepool release <id>`: hands back a node in use, held, or ready (allocated or not). It
 * becomes `used`; the launcher's deleter then deletes a cloud node, or puts a static host's
 * slot back as a new ready node. The action is lib/actions/node-hold.ts `releaseNode`.
 */
import { releaseNode } from '../../lib/actions/node-hold.js';
import { renderNodes } from './list.js';
import { commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult } from './shared.js';
import { settled } from './action-refusal.js';

/** Options of {@link release}. */
export interface ReleaseOptions extends CommandContext {
  id: string;
  json?: boolean;
}

/** Releases a node; exit 0, 1 when its state does not allow it, 3 for an unknown node. */
export function release(opts: ReleaseOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const { node } = settled(await withStore(config, (store) => releaseNode({ store, config }, { nodeId: opts.id })));
    out.out(renderNodes([node], new Set(), (opts.now ?? Date.now)(), { json: opts.json }));
    return EXIT.ok;
  });
}
