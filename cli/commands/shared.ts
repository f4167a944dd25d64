/**
 * What every CLI command shares: the result shape, exit codes, an output that either collects
 * text or forwards it as it comes, and config/store handling that turns errors into the
 * documented exit codes. Commands never print or exit; bin/nodepool.ts does. It loads no
 * store backend and no driver code until a command asks for them (`withStore`;
 * provider-access.ts), so `config-validate` and `--help` load config code only.
 */
import { findDiskimage, findProvider, isRefused } from '../../lib/actions/config-lookup.js';
import { loadConfig, type LoadOptions } from '../../lib/config/load.js';
import type { Config } from '../../lib/config/schema.js';
import { CommandFailure, ConfigError, StoreError, coerceError } from '../../lib/errors.js';
import type { ProviderConfig } from '../../lib/drivers/config-registry.js';
import type { Store } from '../../lib/store/store.js';
import { serverDownText, serverFailingText, serverLiveness, type ServerHeartbeat, type ServerLiveness } from '../../lib/status/server.js';
import { SERVER_HEARTBEAT_KEY } from '../../lib/status/lifecycle-status.js';

/** Output and exit code of a CLI command (bin/ prints and exits). */
export interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** Exit codes scripts can rely on. */
export const EXIT = {
  ok: 0,
  /**
   * Refused or failed: build in progress, paused, followed build failed, no server to follow;
   * node locked or in the wrong state, node request failed or timed out, erase not confirmed;
   * a build that cannot be pinned, promoted or unrevoked.
   */
  failed: 1,
  /** Usage or configuration error. */
  usage: 2,
  /** Unknown build, upload, diskimage, provider, label or node. */
  notFound: 3,
  /** `--follow` interrupted (the build itself goes on); `request --wait` interrupted (the request is deleted). */
  interrupted: 130,
} as const;

/** The `--help` epilogue that documents {@link EXIT}. */
export const EXIT_CODES_HELP = [
  'Exit codes:',
  '  0    success',
  '  1    refused or failed (build in progress, diskimage paused, followed build or upload failed,',
  '       no nodepool-server to follow; node locked or in the wrong state; node request',
  '       failed or timed out; erase not confirmed; a build revoked, not revoked, or with no ready',
  '       upload to pin or promote)',
  '  2    usage or configuration error (config-validate: the file is invalid)',
  '  3    unknown build, upload, diskimage or provider; unknown node, request or label',
  '  130  image-build --follow interrupted (the build and uploads go on); request --wait interrupted',
  '       (the request is deleted)',
].join('\n');

/** Where a long-running command writes as it goes (bin passes the process streams). */
export interface LiveOutput {
  out(text: string): void;
  err(text: string): void;
  /** Whether stderr is a terminal (progress bars redraw in place). */
  errIsTTY: boolean;
}

/** What every command gets. */
export interface CommandContext {
  /** Path of nodepool.yaml. */
  configFile: string;
  /** The secure file (`-s/--secure`) and the environment for `%(NODEPOOL_…)` (lib/config/load.ts). */
  load?: LoadOptions;
  /** Clock for ages and deadlines (default Date.now). */
  now?: () => number;
}

/** Collects a command's output, or forwards it at once when given a {@link LiveOutput}. */
export class CommandOutput {
  private stdout = '';
  private stderr = '';

  constructor(private readonly live?: LiveOutput) {}

  get errIsTTY(): boolean {
    return this.live?.errIsTTY ?? false;
  }

  out(text: string): void {
    if (this.live) this.live.out(text);
    else this.stdout += text;
  }

  err(text: string): void {
    if (this.live) this.live.err(text);
    else this.stderr += text;
  }

  /** The result; text already forwarded to the live output is not repeated. */
  done(exitCode: number): CommandResult {
    return { stdout: this.stdout, stderr: this.stderr, exitCode };
  }
}

/**
 * Runs a command body with its output: a {@link CommandFailure} becomes its sentence and exit
 * code, a ConfigError exit 2, a StoreError exit 1, anything else exit 1 with the stack (a bug).
 */
export async function runCommand(
  body: (out: CommandOutput) => Promise<number>, live?: LiveOutput,
): Promise<CommandResult> {
  const out = new CommandOutput(live);
  try {
    return out.done(await body(out));
  } catch (err) {
    if (err instanceof CommandFailure) {
      out.err(`${err.message}\n`);
      return out.done(err.exitCode);
    }
    if (err instanceof ConfigError) {
      out.err(`${err.message}\n`);
      return out.done(EXIT.usage);
    }
    if (err instanceof StoreError) {
      out.err(`State store error: ${err.message}\n`);
      return out.done(EXIT.failed);
    }
    const e = coerceError(err);
    out.err(`${e.stack ?? e.message}\n`);
    return out.done(EXIT.failed);
  }
}

/** Loads nodepool.yaml (Thrown: ConfigError, which {@link runCommand} maps to exit 2). */
export function commandConfig(ctx: CommandContext): Config {
  return loadConfig(ctx.configFile, ctx.load);
}

/**
 * Opens the configured store, runs `fn`, and closes the store whatever happens. `readOnly`
 * (listing commands): opening creates nothing in a ZooKeeper tree.
 */
export async function withStore<T>(config: Config, fn: (store: Store) => Promise<T>, opts: { readOnly?: boolean } = {}): Promise<T> {
  const { openStore } = await import('../../lib/store/open-store.js');
  const store = await openStore(config, opts.readOnly ? { readOnly: true } : {});
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Reads the server's heartbeat and judges it. */
export async function readServerLiveness(store: Store, now: number): Promise<ServerLiveness> {
  return serverLiveness(await store.getStatus<ServerHeartbeat>(SERVER_HEARTBEAT_KEY), now);
}

/** Warns on stderr when no server is running or its passes fail: the status shown may be out of date. */
export function warnUnlessServerWell(out: CommandOutput, server: ServerLiveness): void {
  if (!server.alive) out.err(`warning: ${serverDownText(server)}; the status shown may be out of date\n`);
  else if (server.failing || server.stuck) out.err(`warning: ${serverFailingText(server)}; the status shown may be out of date\n`);
}

/** Finds a configured diskimage. Thrown: CommandFailure (exit 3) naming the config file. */
export function requireDiskimage(config: Config, name: string): Config['diskimages'][number] {
  const d = findDiskimage(config, name);
  if (isRefused(d)) throw new CommandFailure(EXIT.notFound, d.message);
  return d;
}

/** Finds a configured provider. Thrown: CommandFailure (exit 3) naming the config file. */
export function requireProvider(config: Config, name: string): ProviderConfig {
  const p = findProvider(config, name);
  if (isRefused(p)) throw new CommandFailure(EXIT.notFound, p.message);
  return p;
}
