/**
 * Versioned schema migrations of the SQLite store. The version lives in `PRAGMA user_version`;
 * pending migrations run in one BEGIN IMMEDIATE transaction, so a crash leaves the old version
 * and two processes opening a new file never both migrate it.
 */
import type Database from 'better-sqlite3';
import { StoreError } from '../../errors.js';

/** One schema step: `sql` takes the database from `version - 1` to `version`. */
export interface Migration {
  version: number;
  sql: string;
}

/** Every migration, in order. Append only: a released migration never changes. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE sequences (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
      );
      CREATE TABLE builds (
        id TEXT PRIMARY KEY,
        diskimage TEXT NOT NULL,
        state TEXT NOT NULL,
        state_time INTEGER NOT NULL,
        created INTEGER NOT NULL,
        builder_hostname TEXT,
        builder_id TEXT,
        formats TEXT NOT NULL,
        files TEXT NOT NULL,
        reason TEXT,
        progress TEXT
      );
      CREATE INDEX builds_by_diskimage ON builds (diskimage, id);
      CREATE TABLE uploads (
        id TEXT PRIMARY KEY,
        build_id TEXT NOT NULL REFERENCES builds (id),
        diskimage TEXT NOT NULL,
        provider TEXT NOT NULL,
        image_name TEXT NOT NULL,
        state TEXT NOT NULL,
        state_time INTEGER NOT NULL,
        created INTEGER NOT NULL,
        external_id TEXT,
        external_name TEXT,
        format TEXT,
        reason TEXT,
        progress TEXT
      );
      CREATE INDEX uploads_by_build ON uploads (build_id);
      CREATE INDEX uploads_by_diskimage ON uploads (diskimage, provider, id);
      CREATE TABLE build_requests (
        diskimage TEXT PRIMARY KEY,
        requested INTEGER NOT NULL
      );
      CREATE TABLE pauses (
        diskimage TEXT NOT NULL,
        provider TEXT NOT NULL,
        since INTEGER NOT NULL,
        reason TEXT,
        PRIMARY KEY (diskimage, provider)
      );
      CREATE TABLE status (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated INTEGER NOT NULL
      );
    `,
  },
  {
    // Nodes, node requests, and sessions with their locks and launcher registrations.
    version: 2,
    sql: `
      CREATE TABLE nodes (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        state_time INTEGER NOT NULL,
        created INTEGER NOT NULL,
        provider TEXT NOT NULL,
        pool TEXT NOT NULL,
        labels TEXT NOT NULL,
        launcher TEXT,
        allocated_to TEXT,
        hostname TEXT,
        interface_ip TEXT,
        public_ipv4 TEXT,
        public_ipv6 TEXT,
        private_ipv4 TEXT,
        connection_type TEXT NOT NULL,
        connection_port INTEGER NOT NULL,
        username TEXT,
        host_keys TEXT NOT NULL,
        external_id TEXT,
        cloud TEXT,
        region TEXT,
        az TEXT,
        image TEXT,
        resources TEXT,
        attributes TEXT NOT NULL,
        reason TEXT,
        hold_reason TEXT,
        hold_expiration INTEGER,
        consumer_session TEXT
      );
      CREATE INDEX nodes_by_provider ON nodes (provider, state);
      CREATE INDEX nodes_by_state ON nodes (state);
      CREATE INDEX nodes_by_allocation ON nodes (allocated_to) WHERE allocated_to IS NOT NULL;
      CREATE TABLE node_requests (
        id TEXT PRIMARY KEY,
        priority INTEGER NOT NULL,
        state TEXT NOT NULL,
        state_time INTEGER NOT NULL,
        created INTEGER NOT NULL,
        labels TEXT NOT NULL,
        requestor TEXT NOT NULL,
        reuse INTEGER NOT NULL,
        provider TEXT,
        declined_by TEXT NOT NULL,
        nodes TEXT NOT NULL,
        reason TEXT,
        requestor_session TEXT
      );
      CREATE INDEX node_requests_by_state ON node_requests (state, id);
      CREATE INDEX node_requests_by_session ON node_requests (requestor_session) WHERE requestor_session IS NOT NULL;
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        hostname TEXT NOT NULL,
        pid INTEGER NOT NULL,
        created INTEGER NOT NULL,
        renewed INTEGER NOT NULL,
        ttl_ms INTEGER NOT NULL
      );
      CREATE TABLE locks (
        resource TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        acquired INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX locks_by_session ON locks (session_id);
      CREATE TABLE launchers (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        provider TEXT NOT NULL,
        pool TEXT NOT NULL,
        supported_labels TEXT NOT NULL,
        registered INTEGER NOT NULL
      );
      CREATE INDEX launchers_by_session ON launchers (session_id);
    `,
  },
  {
    // In-use nodes handed off without a lock or session (nodepool request); until version 3 every
    // in-use node without a consumer session was one, so existing ones keep being kept.
    version: 3,
    sql: `
      ALTER TABLE nodes ADD COLUMN handed_off INTEGER NOT NULL DEFAULT 0;
      UPDATE nodes SET handed_off = 1 WHERE state = 'in-use' AND consumer_session IS NULL;
    `,
  },
  {
    // The upload a validation node validates (issue 14 §2).
    version: 4,
    sql: `
      ALTER TABLE nodes ADD COLUMN validates_upload TEXT;
    `,
  },
  {
    // Nodepool 11's node and request fields that Zuul reads (issue 21 §2).
    version: 5,
    sql: `
      ALTER TABLE nodes ADD COLUMN python_path TEXT;
      ALTER TABLE nodes ADD COLUMN shell_type TEXT;
      ALTER TABLE nodes ADD COLUMN tenant_name TEXT;
      ALTER TABLE nodes ADD COLUMN requestor TEXT;
      ALTER TABLE nodes ADD COLUMN driver_data TEXT;
      ALTER TABLE nodes ADD COLUMN user_data TEXT;
      ALTER TABLE nodes ADD COLUMN hold_job TEXT;
      ALTER TABLE nodes ADD COLUMN slot INTEGER;
      ALTER TABLE nodes ADD COLUMN host_id TEXT;
      ALTER TABLE node_requests ADD COLUMN tenant_name TEXT;
      ALTER TABLE node_requests ADD COLUMN relative_priority INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE node_requests ADD COLUMN event_id TEXT;
    `,
  },
  {
    // Nodepool 11's pool priority and paused flag on launcher registrations (issue 21 §2).
    version: 6,
    sql: `
      ALTER TABLE launchers ADD COLUMN priority INTEGER NOT NULL DEFAULT 100;
      ALTER TABLE launchers ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    // Nodepool 11's username, python_path and shell_type of builds and uploads (issue 21): a JSON
    // object of the fields the record has (NULL: none), so "absent" and "null" stay apart as in ZooKeeper.
    version: 7,
    sql: `
      ALTER TABLE builds ADD COLUMN image_fields TEXT;
      ALTER TABLE uploads ADD COLUMN image_fields TEXT;
    `,
  },
  {
    // Image rollout (issue 24): pins (provider '' for a diskimage-wide one, as pauses), revoked
    // builds, and each upload's launch counts and written rollout decision (NULL: none written).
    version: 8,
    sql: `
      CREATE TABLE pins (
        diskimage TEXT NOT NULL,
        provider TEXT NOT NULL,
        build_id TEXT NOT NULL,
        since INTEGER NOT NULL,
        reason TEXT,
        PRIMARY KEY (diskimage, provider)
      );
      CREATE TABLE revocations (
        diskimage TEXT NOT NULL,
        build_id TEXT NOT NULL,
        since INTEGER NOT NULL,
        reason TEXT,
        PRIMARY KEY (diskimage, build_id)
      );
      ALTER TABLE uploads ADD COLUMN launches INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE uploads ADD COLUMN launch_failures INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE uploads ADD COLUMN rollout_state TEXT;
      ALTER TABLE uploads ADD COLUMN rollout_time INTEGER;
      ALTER TABLE uploads ADD COLUMN rollout_reason TEXT;
    `,
  },
  {
    // Issue 25: the audit trail of web writes (10-digit ids from the `audit` sequence; the
    // oldest are pruned), each build's log URL, and operators' upload retry requests.
    version: 9,
    sql: `
      CREATE TABLE audit (
        id TEXT PRIMARY KEY,
        time INTEGER NOT NULL,
        user TEXT,
        role TEXT,
        authenticator TEXT,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        status INTEGER NOT NULL,
        result TEXT NOT NULL,
        message TEXT NOT NULL,
        remote TEXT
      );
      ALTER TABLE builds ADD COLUMN log_url TEXT;
      CREATE TABLE upload_retries (
        diskimage TEXT NOT NULL,
        provider TEXT NOT NULL,
        requested INTEGER NOT NULL,
        PRIMARY KEY (diskimage, provider)
      );
    `,
  },
  {
    // Issue 31 §9: each build's log token (the builder answers its log only to it); NULL for
    // builds recorded before, whose logs the builders do not serve.
    version: 10,
    sql: `
      ALTER TABLE builds ADD COLUMN log_token TEXT;
    `,
  },
  {
    // Issue 35: a pool's standing for placement (headroom, what fills it, its breaker), as JSON;
    // NULL until its launcher publishes one.
    version: 11,
    sql: `
      ALTER TABLE launchers ADD COLUMN standing TEXT;
    `,
  },
];

/** The schema version this code writes. */
export const SCHEMA_VERSION = MIGRATIONS.length === 0 ? 0 : (MIGRATIONS[MIGRATIONS.length - 1] as Migration).version;

/**
 * Brings the database in `file` up to the last of `migrations` and returns the version it
 * found. Thrown: StoreError when the file's version is newer than the code knows (nothing is
 * changed), or when a migration fails (the transaction is rolled back).
 */
export function migrate(db: Database.Database, file: string, migrations: readonly Migration[] = MIGRATIONS): number {
  const latest = migrations.length === 0 ? 0 : (migrations[migrations.length - 1] as Migration).version;
  const run = db.transaction((): number => {
    // Read inside the write transaction: another process may have migrated meanwhile.
    const found = db.pragma('user_version', { simple: true }) as number;
    if (found > latest) {
      throw new StoreError(`${file} has state schema version ${found}, but this nodepool knows versions up to ${latest}; `
        + 'upgrade nodepool or point state-dir elsewhere');
    }
    for (const m of migrations) {
      if (m.version <= found) continue;
      try {
        db.exec(m.sql);
      } catch (cause) {
        throw new StoreError(`migrating ${file} to state schema version ${m.version} failed: ${(cause as Error).message}`, { cause });
      }
      db.pragma(`user_version = ${Math.trunc(m.version)}`);
    }
    return found;
  });
  return run.immediate();
}
