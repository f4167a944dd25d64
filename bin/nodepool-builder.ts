#!/usr/bin/env node
/**
 * nodepool-builder: argv → config → logger → NodepoolBuilder (DIB and command diskimages) → signals.
 * SIGHUP or a change of the config file reloads it; the first SIGINT/SIGTERM drains running
 * jobs (up to --shutdown-timeout), a second one aborts them at once. The builder's port
 * (`--metrics-port`, default any free port) serves Prometheus `/metrics`, `/health/live` and the
 * build logs (`/build-logs/<build-id>`, whose URL on `--advertise-host` each build reports to the
 * server) on webapp.listen-address; a build's log only to that build's log token, which the
 * server sends with the build job (the builder needs no webapp.auth).
 */
import os from 'node:os';
import { createRequire } from 'node:module';
import type Yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { checkGearmanServers } from '../lib/config/gearman-servers.js';
import { processSecrets } from '../lib/redact.js';
import { int, numberArgument, seconds } from '../lib/config/schema-kit.js';
import { NodepoolBuilder } from '../workers/builder/nodepool-builder.js';
import { BUILDER_DEFAULTS } from '../workers/builder/builder-defaults.js';
import { BuilderMetricsServer } from '../workers/builder/metrics-server.js';
import { INSTALLATION_ID_RE } from '../lib/store/installation.js';
import {
  daemonLogger, exitOnFatalError, exitWhenStuck, processImageServices, loadConfigOrExit, reloadedConfig, reloadOnChange, withDaemonOptions,
} from './daemon.js';

// yargs' CommonJS build: its help wraps at word boundaries, while the ES module build cuts
// words at the column width (cliui's ESM wrap is a plain character count).
const yargs = createRequire(import.meta.url)('yargs') as typeof Yargs;

const argv = withDaemonOptions(yargs(hideBin(process.argv)))
  .scriptName('nodepool-builder')
  .usage('$0 -c nodepool.yaml [-s secure.conf]\n\nBuilds images with diskimage-builder and serves uploads and deletes over Gearman.')
  .option('hostname', { type: 'string', default: os.hostname(), describe: 'name this builder reports' })
  // No yargs `type: 'number'` on numbers: it turns "abc" into NaN; the coerce says what it got.
  .option('build-workers', { default: BUILDER_DEFAULTS.buildWorkers, requiresArg: true, coerce: numberArgument('--build-workers', int({ min: 1 })), describe: 'concurrent builds' })
  .option('upload-workers', { default: BUILDER_DEFAULTS.uploadWorkers, requiresArg: true, coerce: numberArgument('--upload-workers', int({ min: 1 })), describe: 'concurrent uploads and deletes' })
  .option('shutdown-timeout', {
    default: BUILDER_DEFAULTS.shutdownTimeoutS, requiresArg: true, coerce: numberArgument('--shutdown-timeout', seconds({ min: 0, fractions: true })),
    describe: 'seconds to let running jobs finish on SIGTERM',
  })
  .option('metrics-port', {
    requiresArg: true, coerce: numberArgument('--metrics-port', int({ min: 0, max: 65535 })),
    describe: 'serve Prometheus /metrics, /health/live and the build logs on this port (on webapp.listen-address; default 0: any free port)',
  })
  .option('advertise-host', {
    type: 'string', requiresArg: true,
    describe: 'host name or address the server reaches --metrics-port at, in build log URLs (default: webapp.listen-address, or --hostname when that is 0.0.0.0 or ::)',
  })
  .option('installation', {
    type: 'string', requiresArg: true,
    coerce: (v: string) => {
      if (!INSTALLATION_ID_RE.test(v)) throw new Error(`--installation: expected an installation id (a UUID, as export-image-data shows it), got ${JSON.stringify(v.slice(0, 80))}`);
      return v;
    },
    describe: 'serve only this installation\'s build jobs: refuse those whose server names another (default: any)',
  })
  .strict()
  .parseSync();

const log = daemonLogger(argv, 'nodepool-builder');
exitOnFatalError(log, 'nodepool-builder');
const source = { file: argv.config, secureFile: argv.secure };
const config = loadConfigOrExit(source, log);
try {
  checkGearmanServers(config, { forBuilder: true });
} catch (err) {
  process.stderr.write(processSecrets.scrub(`${(err as Error).message}\n`));
  process.exit(2);
}
let current = config;
/** The process's host accesses (credentials, sessions), closed after the builder stops. */
const hosts = processImageServices(() => current, log);
const builder = new NodepoolBuilder({
  config,
  log,
  hostname: argv.hostname,
  buildWorkers: argv['build-workers'],
  uploadWorkers: argv['upload-workers'],
  env: process.env,
  imageServices: hosts,
  buildInstances: hosts.buildInstances,
  ...(argv.installation ? { installation: argv.installation } : {}),
});

const metricsPort = argv['metrics-port'] ?? 0;
let metrics: BuilderMetricsServer;
try {
  metrics = await BuilderMetricsServer.start({
    builder, imagesDir: () => current.imagesDir, host: config.webapp.listenAddress, port: metricsPort, log,
    buildLogs: { dir: () => current.buildLogDir, advertiseHost: argv['advertise-host'] ?? advertisedHost(config.webapp.listenAddress, argv.hostname) },
  });
} catch (err) {
  process.stderr.write(`nodepool-builder: --metrics-port ${metricsPort}: cannot listen on ${config.webapp.listenAddress}: ${(err as Error).message}\n`);
  process.exit(2);
}

const watcher = reloadOnChange(source, log, (next) => {
  // Thrown here, the reload is refused and logged; the running config stays.
  checkGearmanServers(next, { forBuilder: true });
  current = reloadedConfig(current, next, log);
  builder.reconfigure(current);
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
    async () => {
      await metrics.stop();
      await hosts.close();
      exitWhenStuck(log, 'nodepool-builder');
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

/** Where the server reaches this builder's port: the address it listens on, or the host's name when it listens on all. */
function advertisedHost(listenAddress: string, hostname: string): string {
  return ['0.0.0.0', '::', '[::]', ''].includes(listenAddress) ? hostname : listenAddress;
}
