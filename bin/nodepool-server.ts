#!/usr/bin/env node
/**
 * nodepool-server: argv → config → logger → NodepoolServer → signals. `--provider NAME`
 * (repeatable) limits the launcher to those providers, so several servers can share one store.
 * SIGHUP or a change of the config file reloads it; SIGINT/SIGTERM stop after the pass in
 * progress (builds and uploads keep running on the builders and are resumed at the next start).
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
  .strict()
  .parseSync();

const log = daemonLogger(argv, 'nodepool-server');
const config = loadConfigOrExit(argv.config);
let current = config;
let server: NodepoolServer | undefined;
try {
  server = await NodepoolServer.create({
    config,
    log,
    hostname: argv.hostname,
    ...(argv.provider?.length ? { providers: argv.provider } : {}),
    imageServices: processImageServices(() => current, log),
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
