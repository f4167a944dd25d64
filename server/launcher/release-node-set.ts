/**
 * How a request handler lets go of its node set: every node in it is unlocked, and when the
 * request is given up (`deallocate`) ready nodes go back to stock and the rest is left for the deleter.
 */
import { nodeLock } from '../../lib/store/lock-names.js';
import type { Store } from '../../lib/store/store.js';

export interface ReleaseNodeSetInput {
  store: Store;
  /** The session the node locks are held under. */
  sessionId: string;
  /** Node ids per requested label slot; emptied (set to null) when deallocating. */
  slots: Array<string | null>;
  /** Nodes taken ready from stock; those released are removed from it when deallocating. */
  reused: Set<string>;
  deallocate: boolean;
}

/** Unlocks the node set; with `deallocate`, ready nodes go back to stock and the rest is left for the deleter. */
export async function releaseNodeSet({ store, sessionId, slots, reused, deallocate }: ReleaseNodeSetInput): Promise<void> {
  for (let i = 0; i < slots.length; i++) {
    const id = slots[i] ?? null;
    if (id === null) continue;
    if (deallocate) {
      const node = await store.getNode(id);
      if (node?.state === 'ready') await store.updateNode(id, { allocatedTo: null }).catch(() => undefined);
      else if (node && (node.state === 'building' || node.state === 'init')) {
        await store.updateNode(id, { state: 'deleting', allocatedTo: null, reason: 'request given up' }).catch(() => undefined);
      }
      slots[i] = null;
      reused.delete(id);
    }
    await store.unlock(nodeLock(id), sessionId);
  }
}
