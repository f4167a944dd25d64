#!/usr/bin/env node
/**
 * nodepool-server: argv → config → logger → NodepoolServer → signals. `--provider NAME`
 * (repeatable) limits the launcher to those providers, so several servers can share one store.
 * SIGHUP or a change of the config file reloads it (a change of the state store's settings restarts
 * the services against the new store); SIGINT/SIGTERM stop after the pass in
 * progress (builds and uploads keep running on the builders and are resumed at the next start).
 * The web status (`webapp:` in nodepool.yaml) is served unless `--no-webapp`; `STATSD_HOST`
 * (and `STATSD_PORT`, default 8125) turn on statsd metrics under Nodepool's names.
 */
import os from 'node:os';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { processSecrets } from '../lib/redact.js';
import { ConfigError, StoreError } from '../lib/errors.js';
import { NodepoolServer } from '../server/main.js';
import type { Config } from '../lib/config/schema.js';
import { describeStore, storeSettingsChanged } from '../lib/config/store-settings.js';
import {
  daemonLogger, exitOnFatalError, exitWhenStuck, processImageServices, loadConfigOrExit, reloadedConfig, reloadOnChange, withDaemonOptions,
} from './daemon.js';

const argv = withDaemonOptions(yargs(hideBin(process.argv)))
  .scriptName('nodepool-server')
  .usage('$0 -c nodepool.yaml [-s secure.conf]\n\nDecides what to build, upload and delete, and has the builders do it over Gearman.')
  .option('hostname', { type: 'string', default: os.hostname(), describe: 'name this server reports' })
  .option('provider', { type: 'string', array: true, describe: 'run only this provider (repeatable); others are left to other servers sharing the store. Without it the server is a fleet member and runs the pools it owns (docs/fleet.md)' })
  .option('webapp', { type: 'boolean', default: true, describe: 'serve the web status and /metrics on webapp.listen-address:port (--no-webapp: do not)' })
  .strict()
  .parseSync();

const log = daemonLogger(argv, 'nodepool-server');
exitOnFatalError(log, 'nodepool-server');
const source = { file: argv.config, secureFile: argv.secure };
const config = loadConfigOrExit(source, log);
const statsd = statsdFromEnv(process.env);
let current = config;
/** One set of host accesses for the process, across store restarts; closed after the last stop. */
const hosts = processImageServices(() => current, log);
const createServer = (cfg: Config): Promise<NodepoolServer> => NodepoolServer.create({
  config: cfg,
  log,
  hostname: argv.hostname,
  ...(argv.provider?.length ? { providers: argv.provider } : {}),
  imageServices: hosts,
  webapp: argv.webapp,
  ...(statsd ? { statsd } : {}),
});
let running: NodepoolServer;
try {
  running = await createServer(config);
} catch (err) {
  const known = err instanceof ConfigError || err instanceof StoreError;
  process.stderr.write(processSecrets.scrub(`nodepool-server: ${known ? (err as Error).message : (err as Error).stack ?? String(err)}\n`));
  process.exit(known ? 2 : 1);
}
/** The config the running services were started with or last reconfigured to. */
let runningConfig = config;
/** The config the running services were started with (their web status keeps its address until then). */
let startedWith = config;
/** SIGINT/SIGTERM received so far. */
let signals = 0;
/** Restarts in progress (a store change on reload), in order; a stop waits for them. */
let restarting: Promise<void> = Promise.resolve();
/** Restarts queued or running: while any is, a reload is left to them instead of the server being stopped. */
let restartsPending = 0;

/**
 * Applies the newest config (`current`, read when this step runs, not when it was queued):
 * another state store restarts the services (every service holds the store and its session:
 * they stop as on SIGTERM and start again against the new store); the same store only
 * reconfigures. When the new store cannot be opened, the server goes back to the old one and
 * says so; if that fails too, it exits 1.
 */
function applyInOrder(): void {
  restartsPending += 1;
  restarting = restarting.then(async () => {
    try {
      if (signals > 0) return;
      const next = current;
      if (!storeSettingsChanged(runningConfig, next)) {
        running.reconfigure(next);
        runningConfig = next;
        return;
      }
      const previous = runningConfig;
      log.warn('state store settings changed: restarting the services against the new store', { from: describeStore(previous), to: describeStore(next) });
      await running.stop();
      try {
        running = await createServer(next);
        runningConfig = next;
        startedWith = next;
        log.info('services restarted against the new state store', { store: describeStore(next) });
      } catch (err) {
        log.error('cannot use the new state store; going back to the running one (fix the config and reload again)', {
          store: describeStore(next), error: (err as Error).message,
        });
        // A reload that came meanwhile is kept only if it also names the running store.
        if (current === next || storeSettingsChanged(previous, current)) current = previous;
        try {
          running = await createServer(current);
          runningConfig = current;
          startedWith = current;
        } catch (again) {
          log.error('cannot reopen the previous state store either; exiting', { error: (again as Error).message });
          process.exit(1);
        }
      }
    } finally {
      restartsPending -= 1;
    }
  }).catch((err: Error) => {
    // Kept out of the chain, so the next reload and the stop still run.
    log.error('applying the reloaded config failed', { error: err.message });
  });
}

const watcher = reloadOnChange(source, log, (next) => {
  const served = startedWith.webapp;
  // A store change restarts the services, web status included, on the new address.
  if (!storeSettingsChanged(runningConfig, next) && (next.webapp.port !== served.port || next.webapp.listenAddress !== served.listenAddress)) {
    log.warn('webapp address changed: it takes effect at the next start', {
      serving: running.web ? `${served.listenAddress}:${running.web.port}` : 'nothing (the web status is not served)',
      configured: `${next.webapp.listenAddress}:${next.webapp.port}`,
    });
  }
  current = reloadedConfig(current, next, log);
  if (restartsPending > 0 || storeSettingsChanged(runningConfig, current)) applyInOrder();
  else {
    running.reconfigure(current);
    runningConfig = current;
  }
});

function onSignal(sig: NodeJS.Signals): void {
  signals += 1;
  if (signals > 1) {
    log.warn('second signal: exiting now; running jobs are resumed at the next start', { signal: sig });
    process.exit(1);
  }
  log.info('shutting down', { signal: sig });
  watcher.close();
  restarting.then(() => running.stop()).then(() => hosts.close()).then(
    () => {
      exitWhenStuck(log, 'nodepool-server');
      process.exitCode = 0;
    },
    (err: Error) => {
      log.error('shutdown failed', { error: err.message });
      process.exit(1);
    },
  );
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

/** Nodepool's statsd environment: `STATSD_HOST` turns it on, `STATSD_PORT` (default 8125). Exits 2 for a bad port. */
function statsdFromEnv(env: NodeJS.ProcessEnv): { host: string; port: number } | undefined {
  const host = env.STATSD_HOST?.trim();
  if (!host) return undefined;
  const raw = env.STATSD_PORT?.trim() || '8125';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`nodepool-server: STATSD_PORT: expected a port number (1-65535), got "${raw}"\n`);
    process.exit(2);
  }
  return { host, port };
}
