/**
 * What the ZooKeeper client (zk-client.ts) knows of node-zookeeper-client: its create modes,
 * watch events and transaction operations in our words, its error codes mapped to
 * {@link ZooKeeperError}, and the few reaches into its internals (cutting the socket, one
 * socket write per tick, exact versions in a transaction), each doing nothing if a later
 * version names things differently.
 */
import zookeeper from 'node-zookeeper-client';
import { ZooKeeperError } from '../../errors.js';

/** Create modes, as ZooKeeper numbers them. */
export const MODE = {
  persistent: zookeeper.CreateMode.PERSISTENT,
  ephemeral: zookeeper.CreateMode.EPHEMERAL,
  persistentSequential: zookeeper.CreateMode.PERSISTENT_SEQUENTIAL,
  ephemeralSequential: zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
} as const;

/** What a watch reports. */
export const EVENT = {
  created: zookeeper.Event.NODE_CREATED,
  deleted: zookeeper.Event.NODE_DELETED,
  dataChanged: zookeeper.Event.NODE_DATA_CHANGED,
} as const;

export type Stat = zookeeper.Stat;

/** One operation of a {@link ZkClient.multi} transaction. */
export type Op =
  /**
   * `known`: a plain (not sequential) create whose data a watching cache of this client may
   * keep without reading it back; its stat is then a stand-in (version 0, the rest zero) until
   * the next change is read, so only for records that use nothing of the stat but the version.
   */
  | { op: 'create'; path: string; data?: Buffer; mode?: number; known?: boolean }
  | { op: 'set'; path: string; data: Buffer; version: number }
  | { op: 'check'; path: string; version: number }
  | { op: 'remove'; path: string; version: number };

/** The stat a znode has when just created, as far as the cache uses one: version 0, zero zxids and times. */
export function createdStat(dataLength: number): Stat {
  const zero = (): Buffer => Buffer.alloc(8);
  return {
    czxid: zero(), mzxid: zero(), ctime: zero(), mtime: zero(), version: 0, cversion: 0, aversion: 0,
    ephemeralOwner: zero(), dataLength, numChildren: 0, pzxid: zero(),
  };
}

/** What one operation of a {@link ZkClient.multi} transaction gave back. */
export interface OpResult {
  /** A create's path (with the sequence suffix for sequential modes). */
  path?: string | undefined;
  /** A set's new stat. */
  stat?: Stat | undefined;
}

/** ZooKeeper error names by code (node-zookeeper-client's Exception codes). */
const CODE_NAMES = new Map<number, string>(Object.entries(zookeeper.Exception)
  .filter((e): e is [string, number] => typeof e[1] === 'number')
  .map(([name, code]) => [code, name]));

/** Maps a client error to a ZooKeeperError naming what was being done. */
export function zkError(err: unknown, what: string, path?: string): ZooKeeperError {
  if (err instanceof ZooKeeperError) return err;
  const code = typeof (err as { code?: unknown })?.code === 'number' ? (err as { code: number }).code : undefined;
  const name = code === undefined ? 'SYSTEM_ERROR' : CODE_NAMES.get(code) ?? `ERROR_${code}`;
  return new ZooKeeperError(name, `${what}: ZooKeeper ${name}${path ? ` (${path})` : ''}`, path, { cause: err });
}

/**
 * Cuts the library client's socket (it then reconnects, or stays closed after close()).
 * node-zookeeper-client has no public way to do this; this reaches its connection manager and
 * does nothing if a later version names things differently.
 */
export function cutSocket(client: zookeeper.Client): void {
  (client as unknown as { connectionManager?: { socket?: { destroy?: () => void } } }).connectionManager?.socket?.destroy?.();
}

/**
 * Sends the requests queued in one tick in one socket write. node-zookeeper-client writes each
 * request as it is queued (one system call, and one read on the server, per request); here its
 * queue's `readable` event is held until the end of the tick, and the socket is corked while the
 * queue is drained, so a burst of calls (a pool worker's handlers at once) goes out together.
 * Order is kept (the queue is drained in order). Reaches into the library's connection manager;
 * does nothing if a later version names things differently.
 */
export function coalesceWrites(client: zookeeper.Client): void {
  const cm = (client as unknown as { connectionManager?: { packetQueue?: { emit?: unknown }; socket?: { cork?: () => void; uncork?: () => void } } }).connectionManager;
  const queue = cm?.packetQueue as { emit: (event: string, ...args: unknown[]) => boolean } | undefined;
  if (!cm || !queue || typeof queue.emit !== 'function') return;
  const emit = queue.emit.bind(queue);
  let scheduled = false;
  queue.emit = (event: string, ...args: unknown[]): boolean => {
    if (event !== 'readable') return emit(event, ...args);
    if (!scheduled) {
      scheduled = true;
      process.nextTick(() => {
        scheduled = false;
        const socket = cm.socket;
        socket?.cork?.();
        try {
          emit('readable');
        } finally {
          socket?.uncork?.();
        }
      });
    }
    return true;
  };
}

/** Session ids as the store shows them: 16 hex digits. */
export function sessionHex(id: Buffer): string {
  return id.toString('hex');
}

/** Sets the version of the operation `tx` queued last (see multi: the library turns 0 into -1). */
export function exactVersion(tx: zookeeper.Transaction, version: number): void {
  const queued = (tx as unknown as { ops?: Array<{ version?: number }> }).ops;
  const last = queued?.[queued.length - 1];
  if (!last || last.version === undefined) throw new Error('node-zookeeper-client changed its Transaction: cannot set an exact version');
  last.version = version;
}
