/**
 * How a request handler takes a ready node from stock for one slot of its node set: it claims a
 * candidate of the pass's shared snapshot, locks it if free, checks it again under the lock, and
 * allocates it to the request.
 */
import type { RequestHandler } from '../../lib/drivers/contract/driver.js';
import type { NodeRecord } from '../../lib/store/models.js';
import { nodeLock } from '../../lib/store/lock-names.js';
import type { Store } from '../../lib/store/store.js';
import { lockIfFree } from './lock-if-free.js';
import { CLAIMED } from './request-handler-types.js';

export interface ReuseReadyNodeInput {
  store: Store;
  driver: RequestHandler;
  /** The session the handler holds its locks under; the node is locked under it. */
  sessionId: string;
  /** Ready, unallocated nodes of the label, from the pool worker's snapshot of this pass. */
  candidates: NodeRecord[];
  /** The handler's node set so far (a node already in it is not taken twice). */
  slots: ReadonlyArray<string | null>;
  requestId: string;
  /** Who the node belongs to once allocated (tenant and requestor of the request). */
  owner: { tenantName: string | null; requestor: string };
}

/** Takes a ready, unallocated node among the candidates; its id, or null when there is none. */
export async function reuseReadyNode({ store, driver, sessionId, candidates, slots, requestId, owner }: ReuseReadyNodeInput): Promise<string | null> {
  for (const candidate of candidates) {
    if (slots.includes(candidate.id)) continue;
    // The snapshot is shared by the pass's handlers, which run at once: a candidate another
    // handler has claimed meanwhile is skipped, and ours is claimed before its lock is tried
    // (else every handler would try the same first candidates). Then mark what is taken or unusable.
    if (candidate.allocatedTo !== null) continue;
    candidate.allocatedTo = CLAIMED;
    if (!await lockIfFree(store, nodeLock(candidate.id), sessionId)) {
      candidate.allocatedTo = 'locked';
      continue;
    }
    const fresh = await store.getNode(candidate.id);
    if (!fresh || fresh.state !== 'ready' || fresh.allocatedTo !== null || !await driver.checkReusableNode(fresh)) {
      candidate.allocatedTo = 'unusable';
      await store.unlock(nodeLock(candidate.id), sessionId);
      continue;
    }
    await store.updateNode(fresh.id, { allocatedTo: requestId, ...owner }, { expectStates: ['ready'] });
    candidate.allocatedTo = requestId;
    return fresh.id;
  }
  return null;
}
