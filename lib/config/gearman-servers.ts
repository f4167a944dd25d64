/**
 * Turns `gearman-servers` config entries into connection addresses, reading TLS PEM files.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import type { GearmanServerAddress } from '../gearman/types.js';
import type { Config } from './schema.js';

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
