/**
 * The ZooKeeper state store: Nodepool's tree and JSON (layout.ts, records.ts), so the
 * server, builders, CLI and Zuul on many hosts share one state. The store facade
 * (lib/store/store-facade.ts) over the ZooKeeper backend (zk-backend.ts), plus how it opens
 * and what only ZooKeeper has (Nodepool 11's component registry, read counts, session credentials).
 */
import { coerceError, StoreError } from '../../errors.js';
import type { ComponentEntry, ComponentKind } from '../components.js';
import { CorruptLog } from '../corrupt.js';
import { StoreFacade } from '../store-facade.js';
import type { StoreOptions } from '../store.js';
import { Layout } from './layout.js';
import { TlsTunnel, type TlsMaterial } from './tls-tunnel.js';
import { ZkBackend } from './zk-backend.js';
import { ReadCounter, StoreGiveUp, ZkClient } from './zk-client.js';

/** One ZooKeeper server as configured. */
export interface ZooKeeperServer {
  host: string;
  port: number;
  chroot?: string | undefined;
}

/** Options of {@link ZooKeeperStore.open}. */
export interface ZooKeeperStoreOptions extends StoreOptions {
  servers: readonly ZooKeeperServer[];
  /** Mutual TLS towards the servers' secure ports (PEM contents). */
  tls?: TlsMaterial;
  /** Session timeout of the handle's main session (default 10 s, Nodepool's `zookeeper-timeout`). */
  sessionTimeoutMs?: number;
  /** How long opening waits for a server (default 15 s). */
  connectTimeoutMs?: number;
}

/** A state store (lib/store/store.ts) in ZooKeeper, with image data export and import. */
export class ZooKeeperStore extends StoreFacade {
  private constructor(private readonly zk: ZkBackend, private readonly readCounter: ReadCounter, private readonly stopping: StoreGiveUp) {
    super(zk);
  }

  /** Store.giveUpWhenUnreachable: every session of this handle gives up after `afterMs` without ZooKeeper. */
  giveUpWhenUnreachable(afterMs: number): { count: number; given: readonly string[] } {
    this.stopping.arm(afterMs);
    return this.stopping;
  }

  /** Where the tree lives (its chroot and paths). */
  get layout(): Layout {
    return this.zk.layout;
  }

  /** How many resources this handle remembers holding a lock contender on (a node deleted with its lock is forgotten). */
  get heldLockCount(): number {
    return this.zk.locks.heldCount;
  }

  /**
   * Connects (through TLS tunnels when `tls` is given), creates the tree's directories under
   * the chroot when missing, and reads the cached parts of the tree.
   * Thrown: StoreError when no server answers, the chroots differ, or the tree cannot be read.
   */
  static async open(opts: ZooKeeperStoreOptions): Promise<ZooKeeperStore> {
    if (opts.servers.length === 0) throw new StoreError('no ZooKeeper servers configured');
    const chroots = new Set(opts.servers.map((s) => normaliseChroot(s.chroot)));
    if (chroots.size > 1) throw new StoreError(`the ZooKeeper servers name different chroots (${[...chroots].map((c) => c || '/').join(', ')}); one store has one chroot`);
    const layout = new Layout([...chroots][0] as string);
    const tunnel = opts.tls ? await TlsTunnel.open(opts.servers, opts.tls) : undefined;
    const hosts = tunnel ? tunnel.hosts : opts.servers.map((s) => `${s.host}:${s.port}`).join(',');
    const reads = new ReadCounter();
    const giveUp = new StoreGiveUp();
    const sessionTimeoutMs = opts.sessionTimeoutMs ?? 10_000;
    let main: ZkClient | undefined;
    try {
      main = await ZkClient.connect({ hosts, sessionTimeoutMs, reads, connectTimeoutMs: opts.connectTimeoutMs, giveUp });
      const present = new Set(await main.getChildren(layout.root) ?? []);
      // A read-only handle (a listing command) leaves the tree as it found it; missing parts read as empty.
      if (!opts.readOnly) for (const dir of layout.dirs) if (!present.has(dir.slice(layout.root.length + 1))) await main.mkdirp(dir);
      const backend = new ZkBackend(main, layout, {
        hosts, tunnel, reads, sessionTimeoutMs, connectTimeoutMs: opts.connectTimeoutMs,
        clock: opts.clock ?? Date.now, corrupt: new CorruptLog(opts.log?.child({ component: 'store' })), giveUp,
      });
      const store = new ZooKeeperStore(backend, reads, giveUp);
      await backend.cache.start();
      // Issue 31: records an older version wrote with a state of ours in Nodepool's `state` field.
      // A one-off rewrite: a failure is logged and the open goes on (the records still read as before).
      if (!opts.readOnly) {
        for (const restate of [backend.builds, backend.uploads]) {
          await restate.restateOwn().catch((err: unknown) => {
            opts.log?.warn('could not rewrite old records to Nodepool 11 states; trying again at the next open', { error: coerceError(err).message });
          });
        }
        // Issue 31: intents an older version kept under Nodepool's images, where its launchers
        // read them as builds. Moved once; until then (a failure here) they are read where they are.
        const move = await backend.intents.moveLegacy().catch((err: unknown) => {
          opts.log?.warn('could not move intents out of /nodepool/images; reading them there, trying again at the next open', { error: coerceError(err).message });
        });
        if (move && move.moved > 0) opts.log?.info('moved intents out of /nodepool/images', { ...move });
      }
      return store;
    } catch (err) {
      await main?.close();
      await tunnel?.close();
      if (err instanceof StoreError) throw err;
      throw new StoreError(`opening the ZooKeeper store at ${hosts}${layout.chroot}: ${coerceError(err).message}`, { cause: err });
    }
  }

  /** ZooKeeper reads this handle made so far (getData, getChildren, exists; not heartbeats). */
  readCount(): number {
    return this.readCounter.count;
  }

  /** The raw ZooKeeper credentials of a store session opened through this handle (for tests that expire it). */
  sessionCredentials(id: string): { sessionId: Buffer; sessionPassword: Buffer } | undefined {
    return this.zk.sessions.credentials(id);
  }

  /** Nodepool 11's component registry as stored: every component of `kind` (any process's), by znode name. */
  listComponents(kind: ComponentKind): Promise<ComponentEntry[]> {
    return this.guard(`listing ${kind} components`, () => this.zk.sessions.components.list(kind));
  }
}

/** '' for no chroot, else `/a/b` (leading slash, no trailing one). */
function normaliseChroot(chroot: string | undefined): string {
  if (chroot === undefined) return '';
  const trimmed = chroot.replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}
