/**
 * NodepoolServer composes the server's services: the state store and this process's store
 * session, one Gearman client and the image lifecycle (when diskimages are configured; one
 * server at a time runs it, under the store lock `leader:image-lifecycle`), the launcher
 * (providers, pool workers, deleter, cleanup, min-ready) and a heartbeat the CLI reads.
 * Config reloads take effect at the next pass. Signals and argv stay in bin/nodepool-server.ts.
 */
import os from 'node:os';
import type { Config } from '../lib/config/schema.js';
import { gearmanAddresses } from '../lib/config/gearman-servers.js';
import type { ImageServiceFactory } from '../lib/drivers/openstack/image-services.js';
import { ConfigError } from '../lib/errors.js';
import { GearmanClient } from '../lib/gearman/client.js';
import { Releasers } from '../lib/lifecycle.js';
import type { Logger } from '../lib/log.js';
import type { ServerHeartbeat } from '../lib/status/server.js';
import { openStore } from '../lib/store/open-store.js';
import type { Store } from '../lib/store/store.js';
import { SERVER_HEARTBEAT_KEY } from './image-lifecycle/actions.js';
import { ImageLifecycle } from './image-lifecycle/image-lifecycle.js';
import { Launcher } from './launcher/launcher.js';
import { StoreSession } from './store-session.js';

/** Options of {@link NodepoolServer.create}. */
export interface NodepoolServerOptions {
  config: Config;
  log: Logger;
  imageServices: ImageServiceFactory;
  /** Reported in the heartbeat (default os.hostname()). */
  hostname?: string;
  pid?: number;
  /** Epoch ms (default Date.now). */
  clock?: () => number;
  /** Run only these providers (`--provider`); all when omitted. */
  providers?: readonly string[];
}

export class NodepoolServer {
  private releasers = new Releasers();
  private heartbeat: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  private readonly started: number;

  private constructor(
    /** Shared with the services, which read the config through it at every pass. */
    private readonly current: { config: Config },
    readonly store: Store,
    readonly lifecycle: ImageLifecycle | undefined,
    readonly launcher: Launcher,
    readonly session: StoreSession,
    private readonly opts: NodepoolServerOptions,
  ) {
    this.started = (opts.clock ?? Date.now)();
  }

  /** Opens the store, connects to gearmand and starts the services. Thrown: StoreError, ConfigError. */
  static async create(opts: NodepoolServerOptions): Promise<NodepoolServer> {
    const { config } = opts;
    if (config.gearmanServers.length === 0 && config.diskimages.length > 0) {
      throw new ConfigError(config.file, [{ path: 'gearman-servers', message: 'nodepool-server needs at least one gearmand to reach its builders' }]);
    }
    const log = opts.log.child({ component: 'server' });
    const hostname = opts.hostname ?? os.hostname();
    const pid = opts.pid ?? process.pid;
    const releasers = new Releasers();
    const store = await openStore(config, opts.clock ? { clock: opts.clock } : {});
    releasers.add('state store', () => store.close());
    try {
      const current = { config };
      const session = await StoreSession.open({ store, owner: 'nodepool-server', hostname, pid, ttlSeconds: () => current.config.launcher.sessionTtl, log });
      releasers.add('store session', () => session.close());
      let lifecycle: ImageLifecycle | undefined;
      if (config.gearmanServers.length > 0) {
        const client = new GearmanClient({ servers: gearmanAddresses(config), clientId: `${hostname}:nodepool-server`, log });
        releasers.add('gearman client', () => client.stop());
        lifecycle = new ImageLifecycle({
          store, client, config: () => current.config, imageServices: opts.imageServices, log,
          leader: () => store.tryLock('leader:image-lifecycle', session.id),
          ...(opts.clock ? { clock: opts.clock } : {}),
        });
        await client.start();
        lifecycle.start();
        const started = lifecycle;
        releasers.add('image lifecycle', () => started.stop());
      }
      const launcher = new Launcher({
        store, log, config: () => current.config, imageServices: opts.imageServices, sessionId: () => session.id,
        hostname, pid, ...(opts.providers ? { only: opts.providers } : {}), ...(opts.clock ? { clock: opts.clock } : {}),
      });
      await launcher.start();
      releasers.add('launcher', () => launcher.stop());
      const server = new NodepoolServer(current, store, lifecycle, launcher, session, opts);
      server.releasers = releasers;
      await server.beat();
      server.heartbeat = setInterval(() => void server.beat(), config.imageLifecycle.interval * 1000);
      log.info('nodepool-server started', {
        store: config.stateDir, gearman: config.gearmanServers.map((s) => `${s.host}:${s.port}`), providers: launcher.providerNames,
      });
      return server;
    } catch (err) {
      await releasers.releaseAll().catch(() => undefined);
      throw err;
    }
  }

  /** Applies a reloaded config; the next pass uses it. */
  reconfigure(config: Config): void {
    this.current.config = config;
    void this.launcher.reconfigure();
  }

  /** Stops every service in reverse order of start. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearInterval(this.heartbeat);
      await this.releasers.releaseAll();
    })();
    return this.stopping;
  }

  private async beat(): Promise<void> {
    const value: ServerHeartbeat = {
      pid: this.opts.pid ?? process.pid,
      hostname: this.opts.hostname ?? os.hostname(),
      started: this.started,
      interval: this.current.config.imageLifecycle.interval,
    };
    try {
      await this.store.putStatus(SERVER_HEARTBEAT_KEY, value);
    } catch (err) {
      this.opts.log.warn('could not write the heartbeat', { error: (err as Error).message });
    }
  }
}
