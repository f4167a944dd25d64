/**
 * `gearman-servers`: the one rule about when the list may be empty (checked by
 * `config-validate`, nodepool-server and nodepool-builder alike), and the entries turned into
 * connection addresses, reading TLS PEM files.
 */
import { readFileSync } from 'node:fs';
import { ConfigError, type ConfigProblem } from '../errors.js';
import type { GearmanServerAddress } from '../gearman/types.js';
import { configEquals } from '../drivers/common-config.js';
import { deepFreeze } from './schema-kit.js';
import type { Config } from './schema.js';

/** What the rule looks at. */
type GearmanRuleInput = Pick<Config, 'gearmanServers' | 'diskimages'>;

/**
 * The rule: a config with diskimages needs at least one gearman server, because the server
 * has its builds, uploads and deletes done through Gearman and the builders take them from
 * there; a launcher-only config (no diskimages) needs none. A builder always needs one
 * (`forBuilder`), since Gearman is where all its work comes from. Pure; undefined when met.
 */
export function gearmanServersProblem(config: GearmanRuleInput, opts: { forBuilder?: boolean } = {}): ConfigProblem | undefined {
  if (config.gearmanServers.length > 0) return undefined;
  const n = config.diskimages.length;
  if (n > 0) {
    return {
      path: 'gearman-servers',
      message: `expected at least one gearman server, got none: the ${n} diskimage${n === 1 ? ' is' : 's are'} built, uploaded and deleted through Gearman (a config without diskimages needs none)`,
    };
  }
  if (opts.forBuilder) {
    return { path: 'gearman-servers', message: 'expected at least one gearman server, got none: nodepool-builder takes all its jobs from Gearman' };
  }
  return undefined;
}

/**
 * A reload keeps the running `gearman-servers`: a daemon holds one set of gearmand
 * connections for its life (its jobs and registrations live on them), so a changed list takes
 * effect at the next start. Returns the config to apply and whether a change was held back. An
 * emptied list is passed through, for {@link checkGearmanServers} to judge. Pure.
 */
export function keepRunningGearmanServers(running: Config, next: Config): { config: Config; heldBack: boolean } {
  if (next.gearmanServers.length === 0 || configEquals(running.gearmanServers, next.gearmanServers)) {
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
