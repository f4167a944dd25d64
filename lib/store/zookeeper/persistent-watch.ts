/**
 * ZooKeeper 3.6's persistent recursive watches (`addWatch`, opcode 106) over
 * node-zookeeper-client, which predates them. One such watch on a path reports every create,
 * delete and data change at or below it, for as long as the connection lives, without being set
 * again: Nodepool's and Zuul's own tree caches (kazoo's `add_watch(PERSISTENT_RECURSIVE)`) are
 * built on them for the same reason as ours: a cache that re-arms one-shot watches reads back
 * every change it is told of, its own writes included.
 *
 * Two reaches into the library, each checked so a later version that names things differently
 * fails loudly at connect instead of silently missing events:
 * - the request is queued on the connection manager as an object that serialises itself as
 *   `addWatch` but declares the type of a request whose reply has no body (delete), so the
 *   library reads the reply (an error code only, as addWatch's) without knowing the opcode;
 * - the watcher manager's `emit` (the notifications of one connection, in order with the
 *   replies) also hands every event to the persistent listeners whose path covers it.
 * Watches belong to a connection: after a reconnect they must be added again (see ZkClient).
 */
import { ZooKeeperError } from '../../errors.js';

/** ZooKeeper's opcode of addWatch and its mode numbers (AddWatchMode). */
export const OP_ADD_WATCH = 106;
export const MODE_PERSISTENT_RECURSIVE = 1;
/** node-zookeeper-client's opcode of delete, whose reply (like addWatch's) has no body. */
const OP_DELETE = 2;

/** One event of a persistent watch: its type (ZooKeeper's Event numbers) and the path it is about. */
export interface WatchEvent {
  type: number;
  path: string;
}

interface LibraryInternals {
  queue: (request: unknown, callback: (err: unknown) => void) => void;
  watcherManager: { emit: (event: WatchEvent) => unknown };
}

/** The library's connection manager, checked to have what this module uses. */
function internals(client: unknown): LibraryInternals {
  const cm = (client as { connectionManager?: Partial<LibraryInternals> }).connectionManager;
  if (!cm || typeof cm.queue !== 'function' || typeof cm.watcherManager?.emit !== 'function') {
    throw new ZooKeeperError('API_ERROR', 'node-zookeeper-client changed its connection manager: cannot add persistent watches');
  }
  return cm as LibraryInternals;
}

/** The addWatch request as the library's queue expects one (header, payload, toBuffer). */
export function addWatchRequest(path: string, mode = MODE_PERSISTENT_RECURSIVE): unknown {
  const pathBytes = Buffer.from(path, 'utf8');
  const header = {
    xid: 0,
    type: OP_DELETE,
    byteLength: (): number => 8,
    serialize(buffer: Buffer, offset: number): number {
      buffer.writeInt32BE(this.xid, offset);
      buffer.writeInt32BE(OP_ADD_WATCH, offset + 4);
      return 8;
    },
  };
  const payload = {
    setChrootPath: (): void => undefined,
    byteLength: (): number => 4 + pathBytes.length + 4,
    serialize(buffer: Buffer, offset: number): number {
      buffer.writeInt32BE(pathBytes.length, offset);
      pathBytes.copy(buffer, offset + 4);
      buffer.writeInt32BE(mode, offset + 4 + pathBytes.length);
      return 8 + pathBytes.length;
    },
  };
  return {
    header,
    payload,
    toBuffer(): Buffer {
      const size = header.byteLength() + payload.byteLength();
      const buffer = Buffer.alloc(4 + size);
      buffer.writeInt32BE(size, 0);
      const at = 4 + header.serialize(buffer, 4);
      payload.serialize(buffer, at);
      return buffer;
    },
  };
}

/** Whether `path` is `root` or below it. */
export function covers(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);
}

/**
 * Persistent watches of one library client: `listen` once (it patches the client's event
 * dispatch), then `add` per path (again after every reconnect).
 */
export class PersistentWatches {
  private readonly listeners: Array<{ root: string; fn: (event: WatchEvent) => void }> = [];
  private readonly cm: LibraryInternals;

  constructor(client: unknown) {
    this.cm = internals(client);
    const wm = this.cm.watcherManager;
    const emit = wm.emit.bind(wm);
    wm.emit = (event: WatchEvent): unknown => {
      for (const l of this.listeners) if (covers(l.root, event.path)) l.fn({ type: event.type, path: event.path });
      return emit(event);
    };
  }

  /** Calls `fn` for every event at or below `root` (once the watch is added). */
  listen(root: string, fn: (event: WatchEvent) => void): void {
    this.listeners.push({ root, fn });
  }

  /** Sends addWatch for `path`; `done` hears the server's answer (an error code, or null). */
  add(path: string, done: (err: unknown) => void): void {
    this.cm.queue(addWatchRequest(path), done);
  }
}
