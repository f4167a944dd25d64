/**
 * Store locks are re-entrant per session, and every component of one server shares the
 * process's session. A component must therefore not take a lock another component of the
 * same process holds: `lockIfFree` refuses any lock a live session holds, ours included, in
 * one store transaction (two components asking at once cannot both win).
 */
import type { Store } from '../../lib/store/store.js';

/** Takes `resource` only when no live session (this one included) holds it. */
export async function lockIfFree(store: Store, resource: string, sessionId: string): Promise<boolean> {
  return store.tryLock(resource, sessionId, { exclusive: true });
}
