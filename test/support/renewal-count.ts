/**
 * A store as a SessionKeeper sees it, with the renewals it asks for counted: the keeper's own
 * clock. A test asserts on renewals (an expiry seen at the first renewal after it) instead of
 * on wall-clock margins that a loaded machine breaks.
 */
import type { SessionStore } from '../../lib/store/store.js';

/** `store` with every `renewSession` call counted; everything else goes to `store` untouched. */
export function countRenewals<S extends SessionStore>(store: S): { store: S; renewals: () => number } {
  let renewals = 0;
  const counted = new Proxy(store, {
    get(target, key) {
      if (key === 'renewSession') {
        return (id: string): Promise<boolean> => {
          renewals += 1;
          return target.renewSession(id);
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: counted, renewals: () => renewals };
}
