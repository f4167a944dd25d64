/**
 * `gearman-servers`: the one rule about when the list may be empty (checked by
 * `config-validate`, nodepool-server and nodepool-builder alike), and the entries turned into
 * connection addresses, reading TLS PEM files.
 */
import { readFileSync } from 'node:fs';
import { ConfigError, type ConfigProblem } from '../errors.js';
import type { GearmanServerAddress } from '../gearman/types.js';
import { configEquals } from './config-equals.js';
import { deepFreeze } from './schema-kit.js';
import type { Config } from './schema.js';

/** What the rule looks at. */
type GearmanRuleInput = Pick<Config, 'gearmanServers' | 'diskimages'>;

/**
 * The rule: a builder always needs a gearman server, since Gearman is where all its work comes
 * from (`forBuilder`). The server needs none: without one it runs its providers and not the
 * image lifecycle (a launcher-only config, as Nodepool 11's launcher files are: they list
 * diskimages for their labels, and the images are built elsewhere). Pure; undefined when met.
 */
export function gearmanServersProblem(config: GearmanRuleInput, opts: { forBuilder?: boolean } = {}): ConfigProblem | undefined {
  if (config.gearmanServers.length > 0 || !opts.forBuilder) return undefined;
  return { path: 'gearman-servers', message: 'expected at least one gearman server, got none: nodepool-builder takes all its jobs from Gearman' };
}

/** What the server's image lifecycle is with this config: `on`, or `off (…)` with the reason. Pure. */
export function imageLifecycleMode(config: GearmanRuleInput): string {
  if (config.gearmanServers.length > 0) return 'on';
  return config.diskimages.length > 0 ? 'off (launcher-only: no gearman-servers)' : 'off (no gearman-servers)';
}

/**
 * A reload keeps the running `gearman-servers`: a daemon holds one set of gearmand
 * connections for its life (its jobs and registrations live on them), and the server starts its
 * image lifecycle only with some, so a changed list (emptied or first filled in too) takes
 * effect at the next start (the builder refuses an emptied list first, with
 * {@link checkGearmanServers}). Returns the config to apply and whether a change was held back. Pure.
 */
export function keepRunningGearmanServers(running: Config, next: Config): { config: Config; heldBack: boolean } {
  if (configEquals(running.gearmanServers, next.gearmanServers)) {
    return { config: next, heldBack: false };
  }
  return { config: deepFreeze({ ...next, gearmanServers: running.gearmanServers }), heldBack: true };
}

/** Applies {@link gearmanServersProblem}. Thrown: {@link ConfigError} naming the file, when the rule is not met. */
export function checkGearmanServers(config: GearmanRuleInput & Pick<Config, 'file'>, opts: { forBuilder?: boolean } = {}): void {
  const problem = gearmanServersProblem(config, opts);
  if (problem) throw new ConfigError(config.file, [problem]);
}

export function gearmanAddresses(config: Pick<Config, 'gearmanServers' | 'file'>): GearmanServerAddress[] {
  return config.gearmanServers.map((s, i) => {
    const addr: GearmanServerAddress = { host: s.host, port: s.port };
    if (s.sslCa !== undefined || s.sslCert !== undefined || s.sslKey !== undefined) {
      const read = (key: string, p: string | undefined): string | undefined => {
        if (p === undefined) return undefined;
        try {
          return readFileSync(p, 'utf8');
        } catch (err) {
          throw new ConfigError(config.file, [{ path: `gearman-servers[${i}].${key}`, message: `cannot read ${p}: ${(err as Error).message}` }]);
        }
      };
      addr.tls = { ca: read('ssl-ca', s.sslCa), cert: read('ssl-cert', s.sslCert), key: read('ssl-key', s.sslKey) };
    }
    return addr;
  });
}
