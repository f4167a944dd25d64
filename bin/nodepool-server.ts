#!/usr/bin/env node
/**
 * nodepool-server: argv → config → logger → NodepoolServer → signals.
 * SIGHUP or a change of the config file reloads it; SIGINT/SIGTERM stop after the pass in
 * progress (builds and uploads keep running on the builders and are resumed at the next start).
 */
import os from 'node:os';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { loadConfig } from '../lib/config/load.js';
import { onConfigChange } from './config-reload.js';
import { standardSearchPaths } from '../lib/drivers/openstack/clouds-yaml.js';
import { openstackImageServices } from '../lib/drivers/openstack/image-services.js';
import { ConfigError, StoreError } from '../lib/errors.js';
import { createRootLogger } from '../lib/log.js';
import { NodepoolServer } from '../server/main.js';

const argv = yargs(hideBin(process.argv))
  .scriptName('nodepool-server')
  .usage('$0 -c nodepool.yaml\n\nDecides what to build, upload and delete, and has the builders do it over Gearman.')
  .option('config', { alias: 'c', type: 'string', default: process.env.NODEPOOL_CONFIG ?? '/etc/nodepool/nodepool.yaml', describe: 'nodepool.yaml (env NODEPOOL_CONFIG)' })
  .option('hostname', { type: 'string', default: os.hostname(), describe: 'name this server reports' })
  .option('log-level', { type: 'string', default: process.env.NODEPOOL_LOG_LEVEL ?? 'info', choices: ['error', 'warn', 'info', 'debug'] })
  .option('log-format', { type: 'string', default: 'pretty', choices: ['pretty', 'json'] })
  .strict()
  .parseSync();

const log = createRootLogger({ level: argv['log-level'], format: argv['log-format'] as 'pretty' | 'json', defaultMeta: { process: 'nodepool-server' } });

let config;
try {
  config = loadConfig(argv.config);
} catch (err) {
  process.stderr.write(`${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(2);
}

let current = config;
let server: NodepoolServer | undefined;
try {
  server = await NodepoolServer.create({
    config,
    log,
    hostname: argv.hostname,
    imageServices: openstackImageServices({
      cloudsFile: () => current.cloudsFile,
      searchPaths: standardSearchPaths({ env: process.env, homeDir: os.homedir(), cwd: process.cwd() }),
      log,
    }),
  });
} catch (err) {
  const known = err instanceof ConfigError || err instanceof StoreError;
  process.stderr.write(`nodepool-server: ${known ? (err as Error).message : (err as Error).stack ?? String(err)}\n`);
  process.exit(known ? 2 : 1);
}
const running = server;

function reload(reason: string): void {
  try {
    const next = loadConfig(argv.config);
    current = next;
    running.reconfigure(next);
    log.info('config reloaded', { reason, file: argv.config });
  } catch (err) {
    log.error('config reload failed; keeping the running config', { reason, error: (err as Error).message });
  }
}

const watcher = onConfigChange(argv.config, reload);

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
