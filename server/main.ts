/**
 * NodepoolServer composes the server's services: the state store, one Gearman client, the
 * image lifecycle and a heartbeat the CLI reads. Config reloads take effect at the next pass.
 * Signals and argv stay in bin/nodepool-server.ts.
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
}

export class NodepoolServer {
  private readonly releasers = new Releasers();
  private heartbeat: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  private readonly started: number;

  private constructor(
    /** Shared with the services, which read the config through it at every pass. */
    private readonly current: { config: Config },
    readonly store: Store,
    readonly lifecycle: ImageLifecycle,
    private readonly client: GearmanClient,
    private readonly opts: NodepoolServerOptions,
  ) {
    this.started = (opts.clock ?? Date.now)();
  }

  /** Opens the store, connects to gearmand and starts the services. Thrown: StoreError, ConfigError. */
  static async create(opts: NodepoolServerOptions): Promise<NodepoolServer> {
    const { config } = opts;
    if (config.gearmanServers.length === 0) {
      throw new ConfigError(config.file, [{ path: 'gearman-servers', message: 'nodepool-server needs at least one gearmand to reach its builders' }]);
    }
    const log = opts.log.child({ component: 'server' });
    const store = await openStore(config, opts.clock ? { clock: opts.clock } : {});
    const client = new GearmanClient({ servers: gearmanAddresses(config), clientId: `${opts.hostname ?? os.hostname()}:nodepool-server`, log });
    const current = { config };
    const lifecycle = new ImageLifecycle({
      store, client, config: () => current.config, imageServices: opts.imageServices, log, ...(opts.clock ? { clock: opts.clock } : {}),
    });
    const server = new NodepoolServer(current, store, lifecycle, client, opts);
    server.releasers.add('state store', () => store.close());
    server.releasers.add('gearman client', () => client.stop());
    await client.start();
    lifecycle.start();
    server.releasers.add('image lifecycle', () => lifecycle.stop());
    await server.beat();
    server.heartbeat = setInterval(() => void server.beat(), config.imageLifecycle.interval * 1000);
    log.info('nodepool-server started', { store: config.stateDir, gearman: config.gearmanServers.map((s) => `${s.host}:${s.port}`) });
    return server;
  }

  /** Applies a reloaded config; the next pass uses it. */
  reconfigure(config: Config): void {
    this.current.config = config;
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
