/**
 * Which settings choose the state store a daemon talks to, and whether a reloaded config
 * changed them. The ZooKeeper keys (`zookeeper-servers`, `zookeeper-tls`, `zookeeper-timeout`)
 * choose the ensemble and the session; `state-dir` chooses the SQLite file while no ZooKeeper
 * server is configured. Pure.
 */
import { configEquals } from './config-equals.js';
import type { Config } from './schema.js';

/** The parts of the config that decide where the state lives. */
export type StoreSettingsInput = Pick<Config, 'stateDir' | 'zookeeperServers' | 'zookeeperTls' | 'zookeeperTimeout'>;

/** The store settings as one comparable value: SQLite's file or ZooKeeper's connection. */
export function storeSettings(config: StoreSettingsInput): Record<string, unknown> {
  if (config.zookeeperServers.length === 0) return { backend: 'sqlite', stateDir: config.stateDir };
  return {
    backend: 'zookeeper',
    servers: config.zookeeperServers,
    tls: config.zookeeperTls ?? null,
    timeout: config.zookeeperTimeout,
  };
}

/** Describes the store settings for a log line: `sqlite <dir>` or `zookeeper host:port,…<chroot>`. */
export function describeStore(config: StoreSettingsInput): string {
  if (config.zookeeperServers.length === 0) return `sqlite ${config.stateDir}`;
  const hosts = config.zookeeperServers.map((s) => `${s.host}:${s.port}`).join(',');
  const chroot = config.zookeeperServers[0]?.chroot ?? '';
  return `zookeeper ${hosts}${chroot}${config.zookeeperTls ? ' (tls)' : ''}`;
}

/** True when `next` talks to another store, or to the same ensemble with other TLS files or session timeout. */
export function storeSettingsChanged(running: StoreSettingsInput, next: StoreSettingsInput): boolean {
  return !configEquals(storeSettings(running), storeSettings(next));
}
