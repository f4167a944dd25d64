/**
 * Deleting a node, the same for every driver and every caller (the launcher's deleter,
 * `nodepool delete --now`): the provider's resource first, then the record, then the
 * provider's notice (a static host registers its slot again).
 */
import type { NodeRecord } from '../../store/models.js';
import type { Store } from '../../store/store.js';
import type { Provider } from '../contract/driver.js';

/** Deletes a locked node marked `deleting`. Thrown: whatever the provider throws (the record then stays). */
export async function removeNode(store: Store, provider: Provider, node: NodeRecord): Promise<void> {
  await provider.cleanupNode(node);
  await store.deleteNode(node.id);
  await provider.nodeDeleted(node);
}
