/**
 * A private MariaDB for the full loopback cloud: its own datadir under the cloud's state
 * directory, reached only through a Unix socket (no TCP port at all), no binlog and lazy
 * flushing (durability does not matter for a throw-away test cloud). Nova, Neutron and
 * Placement use it: SQLite breaks under concurrent boots (reference §4.6).
 */
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '../../lib/lifecycle.js';
import { childEnv, runOnce, tail, type DaemonGroup } from './openstack-daemons.js';

const DB_USER = 'openstack';
const DB_PASSWORD = 'loopback-db';

/** A running private MariaDB. */
export interface LoopbackMariaDb {
  socket: string;
  /** An SQLAlchemy URL for database `name` (PyMySQL over the socket). */
  url(name: string): string;
  /** Runs SQL as root; returns the rows, tab-separated, without headers. */
  query(sql: string, database?: string): Promise<string[][]>;
}

/** Creates the datadir, starts mariadbd in `daemons`, waits for it, and creates `databases`. */
export async function startMariaDb(dir: string, daemons: DaemonGroup, databases: readonly string[]): Promise<LoopbackMariaDb> {
  const dataDir = path.join(dir, 'data');
  const logDir = path.join(dir, 'log');
  await mkdir(logDir, { recursive: true });
  const socket = path.join(dir, 'mysqld.sock');
  const user = (await promisify(execFile)('id', ['-un'], { env: childEnv() })).stdout.trim();
  await runOnce('mariadb-install-db', 'mariadb-install-db', ['--no-defaults', `--user=${user}`, `--datadir=${dataDir}`,
    '--auth-root-authentication-method=socket', '--skip-test-db', '--skip-name-resolve'], path.join(logDir, 'install-db.log'));
  const errLog = path.join(logDir, 'mariadb.err');
  const proc = await daemons.start('mariadbd', 'mariadbd', ['--no-defaults', `--user=${user}`, `--datadir=${dataDir}`,
    `--socket=${socket}`, '--skip-networking', '--skip-name-resolve', '--skip-log-bin', '--innodb-flush-log-at-trx-commit=0',
    '--innodb-doublewrite=0', '--innodb-buffer-pool-size=256M', '--max-connections=1000', '--character-set-server=utf8mb3',
    '--collation-server=utf8mb3_general_ci', `--log-error=${errLog}`, `--pid-file=${path.join(dir, 'mariadbd.pid')}`],
  { logFile: path.join(logDir, 'mariadbd.stdout') });
  const query = async (sql: string, database?: string): Promise<string[][]> => {
    const args = ['--no-defaults', '-S', socket, '-u', 'root', '-N', '-B', '-e', sql];
    if (database) args.push(database);
    const { stdout } = await promisify(execFile)('mariadb', args, { env: childEnv(), timeout: 30_000 });
    return stdout.split('\n').filter((l) => l !== '').map((l) => l.split('\t'));
  };
  await waitFor(async () => {
    if (!proc.alive()) throw new Error(`mariadbd exited; ${errLog}:\n${await tail(errLog)}`);
    return (await query('SELECT 1')).length === 1;
  }, { timeoutMs: 60_000, what: 'mariadbd to accept connections', intervalMs: 100 }).catch(async (err: unknown) => {
    throw new Error(`${(err as Error).message}; ${errLog}:\n${await tail(errLog)}`, { cause: err });
  });
  await query([
    `CREATE USER '${DB_USER}'@'localhost' IDENTIFIED BY '${DB_PASSWORD}'`,
    `GRANT ALL PRIVILEGES ON *.* TO '${DB_USER}'@'localhost'`,
    ...databases.map((d) => `CREATE DATABASE \`${d}\``),
  ].join('; '));
  return {
    socket,
    url: (name) => `mysql+pymysql://${DB_USER}:${DB_PASSWORD}@localhost/${name}?unix_socket=${socket}&charset=utf8`,
    query,
  };
}
