/**
 * A request handler's locks after its store session lapsed and was replaced: the request and
 * node locks went with the old session (or go when ZooKeeper ends it) and are taken again under
 * the new one. A lock the old session still holds is released (that session was given up
 * here); a lock that cannot be taken yet is tried again at the next pass; a lock another
 * session took is someone else's now: the request is left to its new holder, a node slot is
 * emptied (the deleter has that node; the slot is filled again).
 */
import type { Logger } from '../../lib/log.js';
import { nodeLock, requestLock } from '../../lib/store/lock-names.js';
import type { Store } from '../../lib/store/store.js';
import { lockIfFree } from './lock-if-free.js';

/** One handler's locks, and what to do with a node slot whose lock another session took. */
export interface RelockInput {
  store: Store;
  log: Logger;
  requestId: string;
  /** The request's node slots (node ids, null while empty). */
  slots: ReadonlyArray<string | null>;
  /** The session the locks were held under, and the process's session now. */
  old: string;
  now: string;
  /** Locks already taken again under `now` by an earlier try; added to here. */
  relocked: Set<string>;
  /** Slot `i`'s node is locked by another session: the handler empties that slot. */
  onLostNode: (i: number) => void;
}

/**
 * `held`: every lock is held under `now` again; `wait`: one could not be taken yet (try again
 * at the next pass); `left`: the request was handed back or taken meanwhile, and is left to
 * whoever has it now (its lock released if this call took it).
 */
export type RelockOutcome = 'held' | 'wait' | 'left';

export async function relockAll(input: RelockInput): Promise<RelockOutcome> {
  const { store, log, requestId, slots, old, now, relocked } = input;
  const take = async (resource: string): Promise<'held' | 'wait' | 'lost'> => {
    if (relocked.has(resource)) return 'held';
    if (await lockIfFree(store, resource, now)) {
      relocked.add(resource);
      return 'held';
    }
    const holder = await store.getLock(resource);
    if (holder?.live && holder.sessionId !== old) return 'lost';
    if (holder?.sessionId !== old) return 'wait';
    // Still the old session's: ZooKeeper ends a session only a timeout after it hears nothing
    // (after an outage, a timeout after it is back). That session was given up here, so its
    // lock is released at once rather than waited for.
    await store.unlock(resource, old);
    if (!await lockIfFree(store, resource, now)) return 'wait';
    relocked.add(resource);
    return 'held';
  };
  const request = await take(requestLock(requestId));
  if (request === 'wait') return 'wait';
  // Without a lock meanwhile, the request may have been handed back (the cleanup worker resets
  // a pending request nobody locks), taken and even fulfilled by another handler: then it is
  // theirs, and this handler leaves it and its nodes alone.
  const current = request === 'held' ? await store.getRequest(requestId) : undefined;
  if (request === 'lost' || current?.state !== 'pending') {
    log.warn('store session replaced and the request handed back or taken meanwhile; leaving it', { old, session: now, state: current?.state ?? null });
    if (request === 'held') await store.unlock(requestLock(requestId), now);
    return 'left';
  }
  for (let i = 0; i < slots.length; i++) {
    const id = slots[i] ?? null;
    if (id === null) continue;
    const node = await take(nodeLock(id));
    if (node === 'wait') return 'wait';
    if (node === 'lost') {
      log.warn('store session replaced and a node of the request locked by another meanwhile; filling its slot again', { node: id });
      input.onLostNode(i);
    }
  }
  log.warn('store session replaced: the request and node locks are held again under the new session', { old, session: now });
  return 'held';
}
