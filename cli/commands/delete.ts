/**
 * `nodepool delete <id> [--now]`: marks a node `deleting` under its lock (waiting up to 5 s
 * for whoever holds it), so the launcher's deleter removes it. `--now` does the deleter's
 * work in this process: the provider (created, not started) deletes or gives back the
 * resource, the record goes, and the provider is told (static re-registers the slot).
 * The action is lib/actions/node-delete.ts `deleteNode`; this file makes the provider it uses.
 */
import { deleteNode as deleteNodeAction } from '../../lib/actions/node-delete.js';
import type { ProviderConfig } from '../../lib/drivers/config-registry.js';
import type { Provider } from '../../lib/drivers/contract/driver.js';
import { driverOf } from '../../lib/drivers/registry.js';
import { silentLogger } from '../../lib/log.js';
import { renderNodes } from './list.js';
import {
  commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';
import { NO_IMAGE_SERVICES, type ProviderAccess } from './provider-access.js';
import { settled } from './action-refusal.js';

export { DELETE_LOCK_TIMEOUT_MS } from '../../lib/actions/node-delete.js';

/** Options of {@link deleteNode}. */
export interface DeleteOptions extends CommandContext, ProviderAccess {
  id: string;
  /** `--now`: delete the resource and the record now, in this process. */
  immediately?: boolean;
  json?: boolean;
}

/**
 * Deletes a node; exit 0, 1 when its lock stays taken, 3 for an unknown node or (with --now)
 * provider. A corrupt node record, or a corrupt node request named by its id, is removed.
 */
export function deleteNode(opts: DeleteOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    return withStore(config, async (store) => {
      const hosts = opts.immediately ? (opts.imageServices ?? NO_IMAGE_SERVICES)(config, (opts.log ?? silentLogger()).child({ component: 'delete' })) : undefined;
      try {
        const removeWith = hosts && ((pc: ProviderConfig, sessionId: string): Provider => {
          const log = (opts.log ?? silentLogger()).child({ component: 'delete', provider: pc.name, node: opts.id });
          return driverOf(pc).createProvider(pc, { store, log, clock: Date.now, config, sessionId: () => sessionId, hostAccess: () => hosts.access(pc) });
        });
        const r = settled(await deleteNodeAction({ store, config }, { nodeId: opts.id, removeWith, log: opts.log }));
        if (r.node === null) {
          out.out(`${r.message}\n`);
          return EXIT.ok;
        }
        out.out(renderNodes([r.node], new Set(), (opts.now ?? Date.now)(), { json: opts.json }));
        if (r.outcome === 'deleted') out.err(`${r.message}\n`);
        return EXIT.ok;
      } finally {
        await hosts?.close();
      }
    });
  });
}
