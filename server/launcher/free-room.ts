/**
 * How a wedged pool frees room (a request waits, max-servers is reached, and nodes sit ready
 * that no request takes): its oldest ready, unallocated, unlocked node is deleted, one at a
 * time (nothing while one is being deleted already).
 */
import type { Logger } from '../../lib/log.js';
import { nodeLock } from '../../lib/store/lock-names.js';
import type { Store } from '../../lib/store/store.js';
import { lockIfFree } from './lock-if-free.js';

export interface FreeRoomInput {
  store: Store;
  log: Logger;
  provider: string;
  pool: string;
  /** The session the caller holds its locks under; the node is locked under it while marked. */
  sessionId: string;
}

export async function freeOldestUnused({ store, log, provider, pool, sessionId }: FreeRoomInput): Promise<void> {
  const nodes = await store.listNodes({ provider, pool, states: ['ready', 'deleting'] });
  if (nodes.some((n) => n.state === 'deleting')) return;
  const oldest = nodes.filter((n) => n.allocatedTo === null).sort((a, b) => a.stateTime - b.stateTime)[0];
  if (!oldest || !await lockIfFree(store, nodeLock(oldest.id), sessionId)) return;
  try {
    await store.updateNode(oldest.id, { state: 'deleting', reason: 'freeing room for a request' }, { expectStates: ['ready'] });
    log.info('deleting the oldest unused node to free room', { node: oldest.id });
  } catch { /* taken meanwhile */ } finally {
    await store.unlock(nodeLock(oldest.id), sessionId);
  }
}
