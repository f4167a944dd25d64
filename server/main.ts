/**
 * NodepoolServer composes the server's services: the state store and this process's store
 * session, one Gearman client and the image lifecycle (when gearman-servers are configured;
 * without them the server is launcher-only; one server at a time runs it, under the store lock `leader:image-lifecycle`), the launcher
 * (providers, pool workers, deleter, cleanup, min-ready) and a heartbeat the CLI reads,
 * refreshed after the passes of those loops with the health of each; the web status
 * (`webapp:`, with Prometheus `/metrics`, the write API, build logs and the console, over HTTPS
 * with `webapp.tls`) and statsd when asked.
 * Config reloads take effect at the next pass (the web status keeps its first address; the write
 * API's authenticators and their key files are loaded again at once).
 * Signals, argv and the environment stay in bin/nodepool-server.ts.
 */
import os from 'node:os';
import type { Config } from '../lib/config/schema.js';
import { gearmanAddresses, imageLifecycleMode } from '../lib/config/gearman-servers.js';
import { describeStore } from '../lib/config/store-settings.js';
import type { DriverHosts } from '../lib/drivers/core/driver-hosts.js';
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
import { FleetOwnership, FLEET_SESSION_OWNER } from './fleet/fleet-ownership.js';
import { fleetSessionTtlS } from '../lib/fleet/timing.js';
import { coerceError } from '../lib/errors.js';
import { ComponentRegistry } from './components/component-registry.js';
import { StatsdClient } from '../lib/metrics/statsd-client.js';
import { fanOut, watchImageLifecycle, type MetricsSink } from './metrics/outcomes.js';
import { PrometheusMetrics } from './metrics/prometheus-metrics.js';
import { StatsdReporter } from './metrics/statsd-reporter.js';
import type { StatusSource } from './web/status-views.js';
import type { WebContext } from './web/web-context.js';
import { webModules } from './web/web-modules.js';
import { WebServer, type WebServerOptions } from './web/web-server.js';
import { loadAuthenticators } from '../lib/web-auth/authenticators.js';
import type { RequestAuthenticator } from '../lib/web-auth/auth-types.js';
import { ReloadableAuthenticator } from '../lib/web-auth/reloadable.js';

/** Options of {@link NodepoolServer.create}. */
export interface NodepoolServerOptions {
  config: Config;
  log: Logger;
  /** The process's driver host accesses: the image services and the providers' access to their clouds. */
  imageServices: DriverHosts;
  /** Reported in the heartbeat (default os.hostname()). */
  hostname?: string;
  pid?: number;
  /** Epoch ms (default Date.now). */
  clock?: () => number;
  /** Run only these providers (`--provider`); all when omitted. */
  providers?: readonly string[];
  /**
   * Serve the web status on `webapp.listen-address`:`webapp.port` (bin: unless `--no-webapp`;
   * default false). An address that cannot be bound is logged as an error and the server
   * runs on without it, as Nodepool's launcher does.
   */
  webapp?: boolean;
  /** Send statsd metrics (bin: `STATSD_HOST`, `STATSD_PORT`); `gaugeIntervalMs` between node gauges (default 10 s). */
  statsd?: { host: string; port?: number; gaugeIntervalMs?: number };
}

export class NodepoolServer {
  private releasers = new Releasers();
  /** The pool ownership of a fleet member; undefined with --provider. */
  private fleet: FleetOwnership | undefined;
  private stopping: Promise<void> | undefined;
  /** The write API's authenticators, loaded again at every reconfigure; undefined without the webapp. */
  private auth: ReloadableAuthenticator | undefined;

  private constructor(
    /** Shared with the services, which read the config through it at every pass. */
    private readonly current: { config: Config },
    readonly store: Store,
    readonly lifecycle: ImageLifecycle | undefined,
    readonly launcher: Launcher,
    readonly session: SessionKeeper,
    /** The Prometheus metrics `/metrics` serves. */
    readonly metrics: PrometheusMetrics,
    /** The web status; undefined when not asked for or its address could not be bound. */
    readonly web: WebServer | undefined,
    private readonly log: Logger,
  ) {}

  /** Health of every loop of this server: the image lifecycle (when it runs here) and the launcher's. */
  loopHealth(): LoopHealth[] {
    return loopHealthOf(this.lifecycle, this.launcher, this.fleet);
  }

  /** Opens the store, connects to gearmand and starts the services. Thrown: StoreError, ConfigError. */
  static async create(opts: NodepoolServerOptions): Promise<NodepoolServer> {
    const { config } = opts;
    const log = opts.log.child({ component: 'server' });
    const hostname = opts.hostname ?? os.hostname();
    const pid = opts.pid ?? process.pid;
    const releasers = new Releasers();
    const store = await openStore(config, { ...(opts.clock ? { clock: opts.clock } : {}), log: opts.log });
    releasers.add('state store', () => store.close());
    try {
      const current = { config };
      const started = (opts.clock ?? Date.now)();
      /** Set once the server exists; passes that end before then publish no loops yet. */
      const self: { server?: NodepoolServer } = {};
      /** The services as they come up (the web status answers from the start). */
      const parts: { lifecycle?: ImageLifecycle; launcher?: Launcher; fleet?: FleetOwnership; providersStarted: boolean } = { providersStarted: false };
      const loops = (): LoopHealth[] => loopHealthOf(parts.lifecycle, parts.launcher, parts.fleet);
      const heartbeat = new Heartbeat({
        store, log,
        value: () => ({ pid, hostname, started, interval: current.config.imageLifecycle.interval, loops: self.server?.loopHealth() ?? [] }),
      });
      releasers.add('heartbeat', () => heartbeat.stop());
      const onLoopPass = (): void => heartbeat.note();
      // Without --provider the server is a member of the launcher fleet (docs/fleet.md): its session lapses in time for the takeover bound.
      const fleetMember = !opts.providers?.length;
      const sessionTtlS = (): number => (fleetMember
        ? fleetSessionTtlS(current.config.launcher.sessionTtl, current.config.launcher.takeoverTimeout)
        : current.config.launcher.sessionTtl);
      const session = await SessionKeeper.open(store, {
        owner: fleetMember ? FLEET_SESSION_OWNER : 'nodepool-server', hostname, pid, ttlMs: () => sessionTtlS() * 1000, onLapse: 'replace', log,
      });
      releasers.add('store session', () => session.close());
      const metrics = new PrometheusMetrics({
        store, config: () => current.config, loops, resourceLimits: async () => (await self.server?.launcher.resourceLimits()) ?? [],
      });
      const sinks: MetricsSink[] = [metrics];
      if (opts.statsd) {
        const reporter = new StatsdReporter({
          client: new StatsdClient({ host: opts.statsd.host, ...(opts.statsd.port ? { port: opts.statsd.port } : {}), log }),
          store, config: () => current.config, log, ...(opts.statsd.gaugeIntervalMs ? { gaugeIntervalMs: opts.statsd.gaugeIntervalMs } : {}),
        });
        reporter.start();
        releasers.add('statsd', () => reporter.stop());
        sinks.push(reporter);
        log.info('sending statsd metrics', { host: opts.statsd.host, port: opts.statsd.port ?? 8125 });
      }
      const sink = fanOut(sinks);
      const clock = opts.clock ?? Date.now;
      const status: StatusSource = { store, config: () => current.config, clock };
      const auth = opts.webapp ? new ReloadableAuthenticator(await webAuth(config, log)) : undefined;
      const modules = auth ? webModules({
        store, config: () => current.config, auth, status, loops,
        started: () => parts.providersStarted, clock, log: log.child({ component: 'web' }),
      }) : undefined;
      if (modules) releasers.add('web modules', () => modules.stop());
      const web = modules ? await startWeb(config, modules.ctx, modules.routes, metrics, () => imageLifecycleMode(config), modules.unrouted) : undefined;
      if (web) releasers.add('web status', () => web.stop());
      let lifecycle: ImageLifecycle | undefined;
      if (config.gearmanServers.length > 0) {
        const client = new GearmanClient({ servers: gearmanAddresses(config), clientId: `${hostname}:nodepool-server`, log });
        releasers.add('gearman client', () => client.stop());
        lifecycle = new ImageLifecycle({
          store, client, config: () => current.config, imageServices: opts.imageServices, log,
          leader: () => store.tryLock('leader:image-lifecycle', session.id), onLoopPass,
          ...(opts.clock ? { clock: opts.clock } : {}),
        });
        parts.lifecycle = lifecycle;
        releasers.add('lifecycle metrics', watchImageLifecycle(lifecycle, store, sink, log));
        await client.start();
        lifecycle.start();
        const running = lifecycle;
        releasers.add('image lifecycle', () => running.stop());
      }
      const fleet = fleetMember ? new FleetOwnership({
        store, log, config: () => current.config, sessionId: () => session.id, sessionTimeoutMs: () => session.session.ttlMs,
        apply: () => parts.launcher?.reconfigure() ?? Promise.resolve(), onLoopPass,
        ...(current.config.zookeeperServers.length === 0 ? { localHost: { hostname } } : { confirmedAt: () => session.confirmedAt }),
        ...(opts.clock ? { clock: opts.clock } : {}),
      }) : undefined;
      parts.fleet = fleet;
      const launcher = new Launcher({
        store, log, config: () => current.config, imageServices: opts.imageServices, sessionId: () => session.id,
        hostname, pid, onLoopPass, onLaunch: (o) => sink.launchFinished(o), onLeak: (p, r, n) => sink.leaked(p, r, n),
        ...(opts.providers ? { only: opts.providers } : {}), ...(opts.clock ? { clock: opts.clock } : {}),
        ...(fleet ? { ownedPools: fleet.ownedPools } : {}),
      });
      parts.launcher = launcher;
      // A fleet member takes its first leases before the providers start, so they start with their pools.
      await fleet?.pass().catch((err: unknown) => log.warn('the first fleet ownership pass failed; the loop tries again', { error: coerceError(err).message }));
      await launcher.start();
      releasers.add('launcher', () => launcher.stop());
      if (fleet) {
        fleet.start();
        releasers.add('fleet ownership', () => fleet.stop());
      }
      parts.providersStarted = true;
      // Nodepool 11's component registry: this launcher, and the builders while this server leads the image lifecycle.
      const registry = new ComponentRegistry({
        store, log, hostname, sessionId: () => session.id,
        ...(lifecycle ? { builders: { servers: () => gearmanAddresses(current.config), isLeader: async () => (await store.getLock('leader:image-lifecycle'))?.sessionId === session.id } } : {}),
      });
      registry.start();
      releasers.add('component registry', () => registry.stop());
      const server = new NodepoolServer(current, store, lifecycle, launcher, session, metrics, web, log);
      self.server = server;
      server.releasers = releasers;
      server.fleet = fleet;
      server.auth = auth;
      await heartbeat.write();
      // Without gearman-servers (a Nodepool 11 launcher file) the server only launches, from
      // the uploads other servers or builders made; it says so here, in /health/ready and in `nodepool info`.
      log.info(lifecycle ? 'nodepool-server started' : `nodepool-server started, image lifecycle ${imageLifecycleMode(config)}`, {
        store: describeStore(config), gearman: config.gearmanServers.map((s) => `${s.host}:${s.port}`), providers: launcher.providerNames,
        imageLifecycle: imageLifecycleMode(config),
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
    // Key files are read again even when webapp.auth is unchanged: a rotated key takes effect.
    this.auth?.reload(config.webapp.auth).then(
      () => this.log.info('web write API authenticators reloaded', { authenticators: authenticatorNames(config) }),
      (err: Error) => this.log.error('web write API authenticators not reloaded: the ones before stay', { error: err.message }),
    );
    this.launcher.reconfigure().catch((err: Error) => {
      this.log.error('reconfiguring the launcher failed; its providers run on as before', { error: err.message });
    });
  }

  /**
   * Closes the web status first (no new questions while stopping), then every service in reverse
   * order of start. Idempotent. A store that cannot be reached for {@link STORE_GONE_MS} while
   * stopping is given up (ZooKeeper: its calls fail at once), so the stop never waits out the
   * store's timeouts; what was given up is logged, and the release failures it caused do not
   * fail the stop.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const givenUp = this.store.giveUpWhenUnreachable?.(STORE_GONE_MS);
      await this.web?.stop().catch(() => undefined);
      try {
        await this.releasers.releaseAll();
      } catch (err) {
        if (!givenUp?.count) throw err;
        const errors = err instanceof AggregateError ? err.errors as Error[] : [err as Error];
        this.log.warn('release steps failed for want of the state store', { errors: errors.map((e) => e.message) });
      }
      if (givenUp?.count) {
        this.log.warn('stopping without the state store: it was unreachable, so what still needed it was given up', {
          unreachableForMs: STORE_GONE_MS, givenUp: givenUp.count, calls: givenUp.given,
          consequences: 'locks not released and records not updated: the store session (its locks and this launcher\'s registration) ends when the store sees the session timeout pass; requests and nodes locked here are taken up by the next launcher then',
        });
      }
    })();
    return this.stopping;
  }
}

/** How long a stopping server waits for an unreachable store before giving up what still needs it. */
export const STORE_GONE_MS = 2000;

function loopHealthOf(lifecycle: ImageLifecycle | undefined, launcher: Launcher | undefined, fleet: FleetOwnership | undefined): LoopHealth[] {
  return [...(lifecycle ? [lifecycle.loop.health] : []), ...(fleet ? [fleet.loop.health] : []), ...(launcher?.loopHealth() ?? [])];
}

/**
 * The write API's authenticators (`webapp.auth`), their key files read now: a file that cannot
 * be used fails the start with a ConfigError naming it and its key. Without any, every write
 * answers 403 and the server says so now.
 */
async function webAuth(config: Config, log: Logger): Promise<RequestAuthenticator> {
  const auth = await loadAuthenticators(config.webapp.auth);
  if (!auth.enabled) log.warn('web write API off: webapp.auth names no authenticator, so every write answers 403');
  else log.info('web write API on', { authenticators: authenticatorNames(config) });
  return auth;
}

/** `local (HS256)`, … : how logs name the authenticators of `webapp.auth` (never their keys). */
function authenticatorNames(config: Config): string[] {
  return config.webapp.auth.map((a) => `${a.name} (${a.driver})`);
}

/** Starts the web status on the configured address; undefined (logged) when it cannot listen there. */
async function startWeb(
  config: Config, ctx: WebContext, routes: WebServerOptions['routes'], metrics: PrometheusMetrics, imageLifecycle: () => string,
  unrouted?: WebServerOptions['unrouted'],
): Promise<WebServer | undefined> {
  const { listenAddress: host, port, tls } = config.webapp;
  try {
    return await WebServer.start({
      host, port, log: ctx.log, status: ctx.status, loops: ctx.loops, started: ctx.started, imageLifecycle, routes,
      metrics: { contentType: metrics.contentType, render: () => metrics.render() }, ...(tls ? { tls } : {}), ...(unrouted ? { unrouted } : {}),
    });
  } catch (err) {
    ctx.log.error('web status not served: cannot listen on its address (the server runs on without it)', { address: `${host}:${port}`, error: (err as Error).message });
    return undefined;
  }
}
