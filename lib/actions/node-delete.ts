/**
 * Operator action: delete a node (`nodepool delete`): mark it `deleting` under its lock
 * (waiting a bounded time for whoever holds it), so the launcher's deleter removes it; or, with
 * a provider to do it with, do the deleter's work at once (the resource, the record, then the
 * provider's notice: static re-registers the slot). A corrupt node record, or a corrupt node
 * request named by its id, is removed.
 */
import { SessionKeeper } from '../client/session-keeper.js';
import type { ProviderConfig } from '../drivers/config-registry.js';
import type { Provider } from '../drivers/contract/driver.js';
import { removeNode } from '../drivers/core/remove-node.js';
import { coerceError, CorruptRecordError } from '../errors.js';
import { pollUntil } from '../lifecycle.js';
import { silentLogger, type Logger } from '../log.js';
import { nodeLock } from '../store/lock-names.js';
import type { NodeRecord } from '../store/models.js';
import type { Store } from '../store/store.js';
import { refuse, type ActionResult } from './action-result.js';
import type { NodeActionContext } from './node-client.js';

/** How long the lock is waited for by default (Nodepool's CLI waits 5 s). */
export const DELETE_LOCK_TIMEOUT_MS = 5000;

/** Arguments of {@link deleteNode}. */
export interface DeleteNodeArgs {
  nodeId: string;
  /**
   * Delete the resource and the record now, with the provider this makes (created, not
   * started; stopped after). Absent: only mark it, for the launcher's deleter.
   */
  removeWith?: (provider: ProviderConfig, sessionId: string) => Provider;
  /** Who deletes it: the owner of the session used (default `nodepool delete`). */
  requestor?: string;
  /** Default {@link DELETE_LOCK_TIMEOUT_MS}. */
  lockTimeoutMs?: number;
  /**
   * Delete the node only while it is ready and allocated to no request, as read under its lock
   * (an image revocation deletes idle nodes only); otherwise refused `wrong-state`.
   */
  onlyIfIdle?: boolean;
  /** For the session keeper's messages (default silent). */
  log?: Logger;
}

/**
 * The answer of {@link deleteNode}: `marked` (the deleter removes it), `deleted` (removed now),
 * or `corrupt-removed`; `node` is the record marked `deleting` (null for a corrupt record).
 */
export type DeleteNodeResult = ActionResult<
  { nodeId: string; outcome: 'marked' | 'deleted' | 'corrupt-removed'; node: NodeRecord | null },
  'unknown-node' | 'unknown-provider' | 'locked' | 'wrong-state' | 'failed'>;

/** Deletes a node, or removes a corrupt node or request record of that id. */
export async function deleteNode(ctx: NodeActionContext, args: DeleteNodeArgs): Promise<DeleteNodeResult> {
  const { store, config } = ctx;
  const id = args.nodeId;
  let node: NodeRecord | undefined;
  try {
    node = await store.getNode(id);
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
  }
  if (!node) return removeCorrupt(store, id);
  const pc = config.providers.find((p) => p.name === node.provider);
  if (args.removeWith && !pc) {
    return refuse('unknown-provider',
      `Provider ${node.provider} of node ${node.id} not found in ${config.file}; cannot delete it now (without --now a launcher configured with that provider deletes it)`);
  }
  const keeper = await SessionKeeper.open(store, { owner: args.requestor ?? 'nodepool delete', ttlMs: config.launcher.sessionTtl * 1000, log: args.log ?? silentLogger() });
  try {
    const timeoutMs = args.lockTimeoutMs ?? DELETE_LOCK_TIMEOUT_MS;
    const locked = (await pollUntil(async () => (await store.tryLock(nodeLock(id), keeper.id)) || undefined, { timeoutMs, intervalMs: 200 })) ?? false;
    if (!locked) return refuse('locked', `Node ${id} is locked by another session; not deleted (try again later)`);
    if (args.onlyIfIdle) {
      const now = await store.getNode(id);
      if (!now) return refuse('unknown-node', `Node ${id} not found`);
      if (now.state !== 'ready' || now.allocatedTo !== null) {
        await store.unlock(nodeLock(id), keeper.id);
        return refuse('wrong-state', `Node ${id} is ${now.state}${now.allocatedTo !== null ? `, allocated to request ${now.allocatedTo}` : ''}; not deleted`);
      }
    }
    const marked = await store.updateNode(id, { state: 'deleting' });
    if (!marked) return refuse('unknown-node', `Node ${id} not found`);
    if (args.removeWith && pc) {
      try {
        await removeNow(store, args.removeWith(pc, keeper.id), marked);
      } catch (err) {
        return refuse('failed', `Deleting node ${id} now failed: ${coerceError(err).message}; it stays deleting and the launcher's deleter retries`);
      }
    }
    await store.unlock(nodeLock(id), keeper.id);
    return args.removeWith
      ? { ok: true, nodeId: id, outcome: 'deleted', node: marked, message: `Node ${id} deleted` }
      : { ok: true, nodeId: id, outcome: 'marked', node: marked, message: `Node ${id} marked for deletion` };
  } finally {
    await keeper.close();
  }
}

/** The deleter's work for one locked node, with a provider made for it and stopped after. */
async function removeNow(store: Store, provider: Provider, node: NodeRecord): Promise<void> {
  try {
    await removeNode(store, provider, node);
  } finally {
    await provider.stop();
  }
}

/**
 * Removes a corrupt node or request record (lib/store/corrupt.ts) named by `id`. A corrupt
 * node cannot be told to its provider (its record does not say what it is), so its cloud
 * resource, if any, is left to the provider's leak cleanup.
 */
async function removeCorrupt(store: Store, id: string): Promise<DeleteNodeResult> {
  const c = (await store.listCorrupt({ kinds: ['node', 'request'] })).find((x) => x.id === id);
  if (!c) return refuse('unknown-node', `Node ${id} not found`);
  const removed = c.kind === 'node' ? await store.deleteNode(id) : await store.deleteRequest(id);
  if (!removed) return refuse('unknown-node', `${c.kind === 'node' ? 'Node' : 'Node request'} ${id} not found`);
  const message = c.kind === 'node'
    ? `Corrupt node record ${id} removed (${c.reason}); a cloud resource it stood for is left to the provider's leak cleanup`
    : `Corrupt node request ${id} removed (${c.reason})`;
  return { ok: true, nodeId: id, outcome: 'corrupt-removed', node: null, message };
}
