#!/usr/bin/env node
/**
 * nodepool-builder: argv → config → logger → DibBuilder → signals.
 * SIGHUP or a change of the config file reloads it; the first SIGINT/SIGTERM drains running
 * jobs (up to --shutdown-timeout), a second one aborts them at once.
 */
import os from 'node:os';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { DibBuilder } from '../workers/builder/dib-builder.js';
import { daemonLogger, hostImageServices, loadConfigOrExit, reloadOnChange, withDaemonOptions } from './daemon.js';

const argv = withDaemonOptions(yargs(hideBin(process.argv)))
  .scriptName('nodepool-builder')
  .usage('$0 -c nodepool.yaml\n\nBuilds images with diskimage-builder and serves uploads and deletes over Gearman.')
  .option('hostname', { type: 'string', default: os.hostname(), describe: 'name this builder reports' })
  .option('build-workers', { type: 'number', default: 1, describe: 'concurrent builds' })
  .option('upload-workers', { type: 'number', default: 4, describe: 'concurrent uploads and deletes' })
  .option('shutdown-timeout', { type: 'number', default: 30, describe: 'seconds to let running jobs finish on SIGTERM' })
  .strict()
  .parseSync();

const log = daemonLogger(argv, 'nodepool-builder');
const config = loadConfigOrExit(argv.config);
let current = config;
const builder = new DibBuilder({
  config,
  log,
  hostname: argv.hostname,
  buildWorkers: argv['build-workers'],
  uploadWorkers: argv['upload-workers'],
  env: process.env,
  imageServices: hostImageServices(() => current, log),
});

const watcher = reloadOnChange(argv.config, log, (next) => {
  current = next;
  builder.reconfigure(next);
});

let signals = 0;
function onSignal(sig: NodeJS.Signals): void {
  signals += 1;
  if (signals > 1) {
    log.warn('second signal: aborting running jobs', { signal: sig });
    builder.abortAll();
    return;
  }
  log.info('shutting down', { signal: sig });
  watcher.close();
  builder.stop({ abortAfterMs: argv['shutdown-timeout'] * 1000 }).then(
    () => {
      const open = setTimeout(() => log.warn('still open after stop', { handles: process.getActiveResourcesInfo() }), 2000);
      open.unref();
      // Non-zero when work had to be aborted, so supervisors can tell a clean stop from a cut one.
      process.exitCode = builder.aborted() ? 1 : 0;
    },
    (err: Error) => {
      log.error('shutdown failed', { error: err.message });
      process.exit(1);
    },
  );
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

builder.start().catch((err: Error) => {
  log.error('builder failed to start', { error: err.message, stack: err.stack });
  process.exit(1);
});
