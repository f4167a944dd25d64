/**
 * `nodepool delete <id> [--now]`: marks a node `deleting` under its lock (waiting up to 5 s
 * for whoever holds it), so the launcher's deleter removes it. `--now` does the deleter's
 * work in this process: the provider (created, not started) deletes or gives back the
 * resource, the record goes, and the provider is told (static re-registers the slot).
 */
import type { Config } from '../../lib/config/schema.js';
import { SessionKeeper } from '../../lib/client/session-keeper.js';
import { coerceError, CorruptRecordError } from '../../lib/errors.js';
import type { ProviderConfig } from '../../lib/drivers/config-registry.js';
import { driverOf } from '../../lib/drivers/registry.js';
import { removeNode } from '../../lib/drivers/remove-node.js';
import { pollUntil } from '../../lib/lifecycle.js';
import { silentLogger, type Logger } from '../../lib/log.js';
import type { NodeRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { renderNodes } from './list.js';
import {
  commandConfig, CommandFailure, EXIT, NO_IMAGE_SERVICES, runCommand, withStore, type CommandContext, type CommandResult,
  type ProviderAccess,
} from './shared.js';
import { nodeLock } from '../../lib/store/lock-names.js';

/** How long `delete` waits for a node's lock (Nodepool's CLI waits 5 s). */
export const DELETE_LOCK_TIMEOUT_MS = 5000;

/** Options of {@link deleteNode}. */
export interface DeleteOptions extends CommandContext, ProviderAccess {
  id: string;
  /** `--now`: delete the resource and the record now, in this process. */
  immediately?: boolean;
  json?: boolean;
}

/** Takes `node:<id>` for the session, retrying for up to `timeoutMs` (bounded). */
async function lockNode(store: Store, id: string, sessionId: string, timeoutMs: number): Promise<boolean> {
  return (await pollUntil(async () => (await store.tryLock(nodeLock(id), sessionId)) || undefined, { timeoutMs, intervalMs: 200 })) ?? false;
}

/** The deleter's work for one locked node: resource, record, then the provider's notice. */
async function deleteNow(store: Store, config: Config, pc: ProviderConfig, node: NodeRecord, sessionId: string, access: ProviderAccess): Promise<void> {
  const log: Logger = (access.log ?? silentLogger()).child({ component: 'delete', provider: pc.name, node: node.id });
  const provider = driverOf(pc).createProvider(pc, {
    store, log, clock: Date.now, config, sessionId: () => sessionId, imageServices: (access.imageServices ?? NO_IMAGE_SERVICES)(config, log),
  });
  try {
    await removeNode(store, provider, node);
  } finally {
    await provider.stop();
  }
}

/**
 * Removes a corrupt node or request record (lib/store/corrupt.ts) named by `id`; returns what
 * to print, or undefined when `id` names no corrupt record. A corrupt node cannot be told to its
 * provider (its record does not say what it is), so its cloud resource, if any, is left to the
 * provider's leak cleanup.
 */
async function removeCorrupt(store: Store, id: string): Promise<string | undefined> {
  const c = (await store.listCorrupt({ kinds: ['node', 'request'] })).find((x) => x.id === id);
  if (!c) return undefined;
  const removed = c.kind === 'node' ? await store.deleteNode(id) : await store.deleteRequest(id);
  if (!removed) throw new CommandFailure(EXIT.notFound, `${c.kind === 'node' ? 'Node' : 'Node request'} ${id} not found`);
  return c.kind === 'node'
    ? `Corrupt node record ${id} removed (${c.reason}); a cloud resource it stood for is left to the provider's leak cleanup`
    : `Corrupt node request ${id} removed (${c.reason})`;
}

/**
 * Deletes a node; exit 0, 1 when its lock stays taken, 3 for an unknown node or (with --now)
 * provider. A corrupt node record, or a corrupt node request named by its id, is removed.
 */
export function deleteNode(opts: DeleteOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    return withStore(config, async (store) => {
      let node: NodeRecord | undefined;
      try {
        node = await store.getNode(opts.id);
      } catch (err) {
        if (!(err instanceof CorruptRecordError)) throw err;
      }
      if (!node) {
        const removed = await removeCorrupt(store, opts.id);
        if (removed === undefined) throw new CommandFailure(EXIT.notFound, `Node ${opts.id} not found`);
        out.out(`${removed}\n`);
        return EXIT.ok;
      }
      const pc = config.providers.find((p) => p.name === node.provider);
      if (opts.immediately && !pc) {
        throw new CommandFailure(EXIT.notFound,
          `Provider ${node.provider} of node ${node.id} not found in ${config.file}; cannot delete it now (without --now a launcher configured with that provider deletes it)`);
      }
      const keeper = await SessionKeeper.open(store, { owner: 'nodepool delete', ttlMs: config.launcher.sessionTtl * 1000, log: opts.log ?? silentLogger() });
      let marked: NodeRecord | undefined;
      try {
        if (!(await lockNode(store, node.id, keeper.id, DELETE_LOCK_TIMEOUT_MS))) {
          throw new CommandFailure(EXIT.failed, `Node ${node.id} is locked by another session; not deleted (try again later)`);
        }
        marked = await store.updateNode(node.id, { state: 'deleting' });
        if (!marked) throw new CommandFailure(EXIT.notFound, `Node ${opts.id} not found`);
        if (opts.immediately && pc) {
          try {
            await deleteNow(store, config, pc, marked, keeper.id, opts);
          } catch (err) {
            throw new CommandFailure(EXIT.failed,
              `Deleting node ${node.id} now failed: ${coerceError(err).message}; it stays deleting and the launcher's deleter retries`);
          }
        }
        await store.unlock(nodeLock(node.id), keeper.id);
      } finally {
        await keeper.close();
      }
      out.out(renderNodes([marked], new Set(), (opts.now ?? Date.now)(), { json: opts.json }));
      if (opts.immediately) out.err(`Node ${node.id} deleted\n`);
      return EXIT.ok;
    });
  });
}
