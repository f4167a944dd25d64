/**
 * NodepoolServer composes the server's services: the state store and this process's store
 * session, one Gearman client and the image lifecycle (when diskimages are configured; one
 * server at a time runs it, under the store lock `leader:image-lifecycle`), the launcher
 * (providers, pool workers, deleter, cleanup, min-ready) and a heartbeat the CLI reads,
 * refreshed after the passes of those loops with the health of each.
 * Config reloads take effect at the next pass. Signals and argv stay in bin/nodepool-server.ts.
 */
import os from 'node:os';
import type { Config } from '../lib/config/schema.js';
import { checkGearmanServers, gearmanAddresses } from '../lib/config/gearman-servers.js';
import type { ImageServiceFactory } from '../lib/drivers/image-service.js';
import { GearmanClient } from '../lib/gearman/client.js';
import { Releasers } from '../lib/lifecycle.js';
import type { Logger } from '../lib/log.js';
import { SessionKeeper } from '../lib/client/session-keeper.js';
import type { LoopHealth } from '../lib/periodic-loop.js';
import { openStore } from '../lib/store/open-store.js';
import type { Store } from '../lib/store/store.js';
import { Heartbeat } from './heartbeat.js';
import { ImageLifecycle } from './image-lifecycle/image-lifecycle.js';
import { Launcher } from './launcher/launcher.js';

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
  private stopping: Promise<void> | undefined;

  private constructor(
    /** Shared with the services, which read the config through it at every pass. */
    private readonly current: { config: Config },
    readonly store: Store,
    readonly lifecycle: ImageLifecycle | undefined,
    readonly launcher: Launcher,
    readonly session: SessionKeeper,
  ) {}

  /** Health of every loop of this server: the image lifecycle (when it runs here) and the launcher's. */
  loopHealth(): LoopHealth[] {
    return [...(this.lifecycle ? [this.lifecycle.loop.health] : []), ...this.launcher.loopHealth()];
  }

  /** Opens the store, connects to gearmand and starts the services. Thrown: StoreError, ConfigError. */
  static async create(opts: NodepoolServerOptions): Promise<NodepoolServer> {
    const { config } = opts;
    checkGearmanServers(config);
    const log = opts.log.child({ component: 'server' });
    const hostname = opts.hostname ?? os.hostname();
    const pid = opts.pid ?? process.pid;
    const releasers = new Releasers();
    const store = await openStore(config, opts.clock ? { clock: opts.clock } : {});
    releasers.add('state store', () => store.close());
    try {
      const current = { config };
      const started = (opts.clock ?? Date.now)();
      /** Set once the server exists; passes that end before then publish no loops yet. */
      const self: { server?: NodepoolServer } = {};
      const heartbeat = new Heartbeat({
        store, log,
        value: () => ({ pid, hostname, started, interval: current.config.imageLifecycle.interval, loops: self.server?.loopHealth() ?? [] }),
      });
      releasers.add('heartbeat', () => heartbeat.stop());
      const onLoopPass = (): void => heartbeat.note();
      const session = await SessionKeeper.open(store, {
        owner: 'nodepool-server', hostname, pid, ttlMs: () => current.config.launcher.sessionTtl * 1000, onLapse: 'replace', log,
      });
      releasers.add('store session', () => session.close());
      let lifecycle: ImageLifecycle | undefined;
      if (config.gearmanServers.length > 0) {
        const client = new GearmanClient({ servers: gearmanAddresses(config), clientId: `${hostname}:nodepool-server`, log });
        releasers.add('gearman client', () => client.stop());
        lifecycle = new ImageLifecycle({
          store, client, config: () => current.config, imageServices: opts.imageServices, log,
          leader: () => store.tryLock('leader:image-lifecycle', session.id), onLoopPass,
          ...(opts.clock ? { clock: opts.clock } : {}),
        });
        await client.start();
        lifecycle.start();
        const running = lifecycle;
        releasers.add('image lifecycle', () => running.stop());
      }
      const launcher = new Launcher({
        store, log, config: () => current.config, imageServices: opts.imageServices, sessionId: () => session.id,
        hostname, pid, onLoopPass, ...(opts.providers ? { only: opts.providers } : {}), ...(opts.clock ? { clock: opts.clock } : {}),
      });
      await launcher.start();
      releasers.add('launcher', () => launcher.stop());
      const server = new NodepoolServer(current, store, lifecycle, launcher, session);
      self.server = server;
      server.releasers = releasers;
      await heartbeat.write();
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
    this.stopping ??= this.releasers.releaseAll();
    return this.stopping;
  }
}
