/**
 * What nodepool-server and nodepool-builder share at their edge: the common options, the
 * root logger, loading the config (exit 2 on a config error), reloads on SIGHUP or a change
 * of the config file, and the drivers' host accesses (credentials) with their image services.
 */
import { watch, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Argv } from 'yargs';
import { versionText } from '../lib/build-info.js';
import { keepRunningGearmanServers } from '../lib/config/gearman-servers.js';
import { loadConfig } from '../lib/config/load.js';
import type { Config } from '../lib/config/schema.js';
import { driverHosts, type DriverHosts } from '../lib/drivers/core/driver-hosts.js';
import { ConfigError } from '../lib/errors.js';
import { createRootLogger, type Logger } from '../lib/log.js';
import { processSecrets } from '../lib/redact.js';

/**
 * Adds `-c/--config`, `-s/--secure` (Nodepool's secure file), `--log-level`, `--log-format` and `--version` (package version and git
 * revision). Help is wrapped at the terminal's width (at most 100) on a terminal and not at all
 * otherwise: yargs' default width is undefined without a terminal, and its ES module build cuts
 * words wherever it wraps. A command-line error prints one line and exits 2 (a usage error).
 */
export function withDaemonOptions<T>(y: Argv<T>) {
  return y
    .option('config', { alias: 'c', type: 'string', default: process.env.NODEPOOL_CONFIG ?? '/etc/nodepool/nodepool.yaml', describe: 'nodepool.yaml (env NODEPOOL_CONFIG)' })
    .option('secure', {
      alias: 's', type: 'string', requiresArg: true,
      describe: "Nodepool's secure file: zookeeper-servers, zookeeper-tls, diskimages' env-vars (env NODEPOOL_SECURE)",
      ...(process.env.NODEPOOL_SECURE ? { default: process.env.NODEPOOL_SECURE } : {}),
    })
    .option('log-level', { type: 'string', default: process.env.NODEPOOL_LOG_LEVEL ?? 'info', choices: ['error', 'warn', 'info', 'debug'] })
    .option('log-format', { type: 'string', default: 'pretty', choices: ['pretty', 'json'] })
    .version(versionText())
    .wrap(process.stdout.isTTY ? Math.min(100, process.stdout.columns) : null)
    .fail((msg, err) => {
      process.stderr.write(`${msg ?? err?.message ?? 'usage error'} (see --help)\n`);
      process.exit(2);
    });
}

/** The root logger of a daemon. */
export function daemonLogger(argv: { 'log-level': string; 'log-format': string }, name: string): Logger {
  return createRootLogger({ level: argv['log-level'], format: argv['log-format'] as 'pretty' | 'json', defaultMeta: { process: name } });
}

/** Exit code of a daemon that died of an error nothing handled (EX_SOFTWARE): never 0, so `Restart=on-failure` restarts it. */
export const FATAL_EXIT_CODE = 70;

/**
 * Makes an unhandled rejection or an uncaught exception fatal and loud: the error is logged
 * (and written straight to stderr, in case the logger's stream is what broke) and the
 * process exits {@link FATAL_EXIT_CODE}. Node's own default is to die of an unhandled
 * rejection too, but with whatever exit code a signal handler had set meanwhile (0 after a
 * SIGTERM), and with nothing in the daemon's log.
 */
export function exitOnFatalError(log: Logger, name: string): void {
  let dying = false;
  const die = (kind: string, raw: unknown): void => {
    const err = raw instanceof Error ? raw : new Error(String(raw));
    if (!dying) {
      dying = true;
      try {
        // Not through the logger, so scrubbed here: no known secret (clouds.yaml, tokens) in the journal.
        writeSync(2, processSecrets.scrub(`${name}: ${kind}: ${err.stack ?? err.message}\n`));
      } catch {
        // stderr itself is gone; the log line below may still reach a file
      }
      log.error(`${kind}: exiting`, { error: err.message, stack: err.stack });
    }
    process.exitCode = FATAL_EXIT_CODE;
    // Give the logger's stream a moment to drain; not unref'd, so the exit happens even when idle.
    setTimeout(() => process.exit(FATAL_EXIT_CODE), 200);
  };
  process.on('unhandledRejection', (reason) => die('unhandled rejection', reason));
  process.on('uncaughtException', (err) => die('uncaught exception', err));
}

/** How long a cleanly stopped daemon may take to exit before {@link exitWhenStuck} names what holds it. */
export const EXIT_GRACE_MS = 5000;

/**
 * Arms an unref'd timer after a clean shutdown: a process that exits on its own never sees
 * it; one that is still alive `graceMs` later (a socket, timer or child left open) logs the
 * handles still open (process.getActiveResourcesInfo()) and exits with the exit code already
 * set, instead of hanging silently (graphile's CLI does the same).
 */
export function exitWhenStuck(log: Logger, name: string, graceMs = EXIT_GRACE_MS): void {
  setTimeout(() => {
    const handles = process.getActiveResourcesInfo();
    log.warn('still open after stop; exiting', { handles, afterMs: graceMs });
    try {
      writeSync(2, `${name}: still open ${graceMs} ms after stop: ${handles.join(', ')}; exiting\n`);
    } catch {
      // stderr is gone; the log line above may still reach a file
    }
    // A moment for the logger's stream to drain (not unref'd: the exit happens even when idle).
    setTimeout(() => process.exit(), 200);
  }, graceMs).unref();
}

/** Where a daemon's config comes from: `-c`, `-s` and this process's environment (for `%(NODEPOOL_…)`). */
export interface ConfigSource {
  file: string;
  secureFile?: string | undefined;
}

/**
 * Loads the config and its secure file; the loader registers the secrets they brought (the
 * secure file's env-vars, secret-named `%(NODEPOOL_…)` values, the clouds.yaml the openstack
 * providers authenticate with) with processSecrets, so no log line, build log or job failure
 * shows them, from the start and after each reload. Logs every key accepted but not
 * honoured. Thrown: ConfigError.
 */
export function loadDaemonConfig(source: ConfigSource, log: Logger): Config {
  const config = loadConfig(source.file, {
    env: process.env, host: { homeDir: os.homedir(), cwd: process.cwd() }, ...(source.secureFile !== undefined ? { secureFile: source.secureFile } : {}),
  });
  logConfigWarnings(config, log);
  return config;
}

/** Logs each key of the config that is accepted but not honoured (a driver we lack, a deprecated key). */
export function logConfigWarnings(config: Config, log: Logger): void {
  for (const w of config.warnings) log.warn(`config: ${w.path ? `${w.path}: ` : ''}${w.message}`, { file: w.file });
}

/** Loads the config ({@link loadDaemonConfig}), or prints the problem and exits 2. */
export function loadConfigOrExit(source: ConfigSource, log: Logger): Config {
  try {
    return loadDaemonConfig(source, log);
  } catch (err) {
    process.stderr.write(processSecrets.scrub(`${err instanceof ConfigError ? err.message : String(err)}\n`));
    process.exit(2);
  }
}

/**
 * Reloads the config on SIGHUP and (debounced) when the config or the secure file changes, as
 * Nodepool's launcher does, and hands a valid one to `apply`; an invalid file is logged and
 * the running config kept. The directories are watched, not the files, because editors and
 * config management replace files by rename.
 */
export function reloadOnChange(source: ConfigSource, log: Logger, apply: (config: Config) => void): { close(): void } {
  const reload = (reason: string): void => {
    try {
      apply(loadDaemonConfig(source, log));
      log.info('config reloaded', { reason, file: source.file });
    } catch (err) {
      log.error('config reload failed; keeping the running config', { reason, error: processSecrets.scrub((err as Error).message) });
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const files = [source.file, ...(source.secureFile !== undefined ? [source.secureFile] : [])].map((f) => path.resolve(f));
  const watchers = [...new Set(files.map((f) => path.dirname(f)))].map((dir) => watch(dir, (_event, name) => {
    if (name === null || !files.includes(path.join(dir, name))) return;
    clearTimeout(timer);
    timer = setTimeout(() => reload('file changed'), 300);
  }));
  const onHup = (): void => reload('SIGHUP');
  process.on('SIGHUP', onHup);
  return {
    close() {
      for (const w of watchers) w.close();
      clearTimeout(timer);
      process.off('SIGHUP', onHup);
    },
  };
}

/**
 * The config a reload applies: `next`, but with the running `gearman-servers` when the file
 * changed them, and an error logged that only a restart uses the new ones.
 */
export function reloadedConfig(running: Config, next: Config, log: Logger): Config {
  const { config, heldBack } = keepRunningGearmanServers(running, next);
  if (heldBack) {
    const list = (c: Config): string[] => c.gearmanServers.map((s) => `${s.host}:${s.port}`);
    log.error('gearman-servers changed in the config: restart this daemon to use them; it keeps the running ones until then', {
      running: list(running), configured: list(next),
    });
  }
  return config;
}

/**
 * The drivers' host accesses and image services of this host's providers, from its own
 * credentials: each driver reads the settings of the current config it declared, and this
 * process's environment and directories.
 */
export function processImageServices(current: () => Config, log: Logger): DriverHosts {
  return driverHosts({ settings: current, env: process.env, homeDir: os.homedir(), cwd: process.cwd(), log });
}
