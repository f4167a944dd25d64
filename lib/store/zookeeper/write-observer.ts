/** The observer a ZkClient tells of its data writes (the tree cache uses it to stay in order). */
import type { Stat } from './zk-library.js';

/**
 * Told of this client's data writes (setData, and the sets of a multi): `sent` as one goes out,
 * `done` with what it wrote (undefined when it failed) from the library's reply callback, which
 * runs in wire order with the watch events (before any event that came after the reply).
 */
export interface WriteObserver {
  sent(path: string): void;
  done(path: string, written: { data: Buffer; stat: Stat } | undefined): void;
}
