/**
 * Opens the state store the config asks for: SQLite in `<state-dir>/nodepool.db` unless
 * ZooKeeper servers are configured. Server and CLI both come through here, so they always
 * agree on where the state is.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/schema.js';
import { coerceError, StoreError } from '../errors.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store, StoreOptions } from './store.js';

/** The parts of the config that choose the store. */
export type StoreConfig = Pick<Config, 'stateDir' | 'zookeeperServers'>;

/** File name of the SQLite store inside state-dir. */
export const SQLITE_STORE_FILE = 'nodepool.db';

/** Path of the SQLite store file: `<stateDir>/nodepool.db`. */
export function storePath(config: Pick<Config, 'stateDir'>): string {
  return path.join(config.stateDir, SQLITE_STORE_FILE);
}

/**
 * Opens the configured store, creating state-dir (mode 0750) when it is missing.
 * Thrown: StoreError when ZooKeeper servers are configured (that backend is not built yet),
 * when state-dir cannot be created, or when the database cannot be opened.
 */
export async function openStore(config: StoreConfig, opts: StoreOptions = {}): Promise<Store> {
  if (config.zookeeperServers.length > 0) {
    throw new StoreError(`the ZooKeeper store is not built yet; remove zookeeper-servers to use the SQLite store in ${config.stateDir}`);
  }
  try {
    await mkdir(config.stateDir, { recursive: true, mode: 0o750 });
  } catch (cause) {
    throw new StoreError(`creating state-dir ${config.stateDir}: ${coerceError(cause).message}`, { cause });
  }
  return SqliteStore.open(storePath(config), opts);
}
