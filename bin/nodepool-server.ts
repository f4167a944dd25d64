#!/usr/bin/env node
/**
 * nodepool-server: argv → config → logger → NodepoolServer → signals. `--provider NAME`
 * (repeatable) limits the launcher to those providers, so several servers can share one store.
 * SIGHUP or a change of the config file reloads it; SIGINT/SIGTERM stop after the pass in
 * progress (builds and uploads keep running on the builders and are resumed at the next start).
 * The web status (`webapp:` in nodepool.yaml) is served unless `--no-webapp`; `STATSD_HOST`
 * (and `STATSD_PORT`, default 8125) turn on statsd metrics under Nodepool's names.
 */
import os from 'node:os';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ConfigError, StoreError } from '../lib/errors.js';
import { NodepoolServer } from '../server/main.js';
import { checkGearmanServers } from '../lib/config/gearman-servers.js';
import { daemonLogger, processImageServices, loadConfigOrExit, reloadedConfig, reloadOnChange, withDaemonOptions } from './daemon.js';

const argv = withDaemonOptions(yargs(hideBin(process.argv)))
  .scriptName('nodepool-server')
  .usage('$0 -c nodepool.yaml\n\nDecides what to build, upload and delete, and has the builders do it over Gearman.')
  .option('hostname', { type: 'string', default: os.hostname(), describe: 'name this server reports' })
  .option('provider', { type: 'string', array: true, describe: 'run only this provider (repeatable); others are left to other servers sharing the store' })
  .option('webapp', { type: 'boolean', default: true, describe: 'serve the web status and /metrics on webapp.listen-address:port (--no-webapp: do not)' })
  .strict()
  .parseSync();

const log = daemonLogger(argv, 'nodepool-server');
const config = loadConfigOrExit(argv.config);
const statsd = statsdFromEnv(process.env);
let current = config;
let server: NodepoolServer | undefined;
try {
  server = await NodepoolServer.create({
    config,
    log,
    hostname: argv.hostname,
    ...(argv.provider?.length ? { providers: argv.provider } : {}),
    imageServices: processImageServices(() => current, log),
    webapp: argv.webapp,
    ...(statsd ? { statsd } : {}),
  });
} catch (err) {
  const known = err instanceof ConfigError || err instanceof StoreError;
  process.stderr.write(`nodepool-server: ${known ? (err as Error).message : (err as Error).stack ?? String(err)}\n`);
  process.exit(known ? 2 : 1);
}
const running = server;

const watcher = reloadOnChange(argv.config, log, (next) => {
  // Thrown here, the reload is refused and logged; the running config stays.
  checkGearmanServers(next);
  if (next.webapp.port !== current.webapp.port || next.webapp.listenAddress !== current.webapp.listenAddress) {
    log.warn('webapp address changed: it takes effect at the next start', { serving: `${current.webapp.listenAddress}:${current.webapp.port}` });
  }
  current = reloadedConfig(current, next, log);
  running.reconfigure(current);
});

let signals = 0;
function onSignal(sig: NodeJS.Signals): void {
  signals += 1;
  if (signals > 1) {
    log.warn('second signal: exiting now; running jobs are resumed at the next start', { signal: sig });
    process.exit(1);
  }
  log.info('shutting down', { signal: sig });
  watcher.close();
  running.stop().then(
    () => {
      const open = setTimeout(() => log.warn('still open after stop', { handles: process.getActiveResourcesInfo() }), 2000);
      open.unref();
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
