/**
 * Opens the state store the config asks for: SQLite in `<state-dir>/nodepool.db` unless
 * ZooKeeper servers are configured, then ZooKeeper (with mutual TLS when `zookeeper-tls` is
 * set). Server and CLI both come through here, so they always agree on where the state is.
 */
import { readFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/schema.js';
import { ConfigError, coerceError, StoreError } from '../errors.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store, StoreOptions } from './store.js';
import type { TlsMaterial } from './zookeeper/tls-tunnel.js';

/** The parts of the config that choose the store (TLS and timeout only matter with ZooKeeper servers). */
export type StoreConfig = Pick<Config, 'stateDir' | 'zookeeperServers'>
  & Partial<Pick<Config, 'zookeeperTls' | 'zookeeperTimeout' | 'file'>>;

/** File name of the SQLite store inside state-dir. */
export const SQLITE_STORE_FILE = 'nodepool.db';

/** Path of the SQLite store file: `<stateDir>/nodepool.db`. */
export function storePath(config: Pick<Config, 'stateDir'>): string {
  return path.join(config.stateDir, SQLITE_STORE_FILE);
}

/**
 * Opens the configured store. SQLite: creates state-dir (mode 0750) when it is missing.
 * ZooKeeper: connects to `zookeeper-servers` with a session timeout of `zookeeper-timeout`.
 * Thrown: ConfigError naming the key when a `zookeeper-tls` file cannot be read; StoreError
 * when state-dir cannot be created, the database cannot be opened, or no ZooKeeper server answers.
 */
export async function openStore(config: StoreConfig, opts: StoreOptions = {}): Promise<Store> {
  if (config.zookeeperServers.length > 0) {
    const tls = config.zookeeperTls ? await readTls(config.zookeeperTls, config.file ?? 'nodepool.yaml') : undefined;
    // Loaded only here: every CLI command comes through this module, and the ZooKeeper client
    // would add about 30 ms to each start where SQLite is used (bench/cli-startup.ts).
    const { ZooKeeperStore } = await import('./zookeeper/zookeeper-store.js');
    return ZooKeeperStore.open({
      ...opts,
      servers: config.zookeeperServers,
      ...(tls ? { tls } : {}),
      sessionTimeoutMs: Math.round((config.zookeeperTimeout ?? 10) * 1000),
    });
  }
  try {
    await makeDirs(config.stateDir, 0o750);
  } catch (cause) {
    throw new StoreError(`creating state-dir ${config.stateDir}: ${coerceError(cause).message}`, { cause });
  }
  return SqliteStore.open(storePath(config), opts);
}

/**
 * `mkdir -p`, one level at a time. Not `mkdir(dir, { recursive: true })`: Node 20's recursive
 * mkdir never settles (it spins) under a file system that answers ENOENT for a directory whose
 * parent exists, as /proc does, so a state-dir under /proc hung every command (issue 31 §10).
 */
async function makeDirs(dir: string, mode: number): Promise<void> {
  try {
    await mkdir(dir, { mode });
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    const parent = path.dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw err;
  }
  await makeDirs(path.dirname(dir), mode);
  try {
    // ENOENT again, with the parent there: this file system makes no directory here (/proc).
    await mkdir(dir, { mode });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

async function readTls(files: NonNullable<Config['zookeeperTls']>, configFile: string): Promise<TlsMaterial> {
  const read = async (key: 'ca' | 'cert' | 'key'): Promise<string> => {
    try {
      return await readFile(files[key], 'utf8');
    } catch (err) {
      throw new ConfigError(configFile, [{ path: `zookeeper-tls.${key}`, message: `cannot read ${files[key]}: ${coerceError(err).message}` }], { cause: err });
    }
  };
  return { ca: await read('ca'), cert: await read('cert'), key: await read('key') };
}
