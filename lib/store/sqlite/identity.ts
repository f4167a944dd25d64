/**
 * The installation id of a SQLite store, in a one-row table `installation`. The table is made
 * on the first call that asks for the id (not by a migration), so only the server, which asks,
 * ever writes it: a read-only CLI command leaves the file as it was. Concurrent first calls of
 * two processes agree: the first INSERT wins, the other reads it.
 */
import type Database from 'better-sqlite3';
import { newInstallationId } from '../installation.js';

/**
 * Reads, creating it once when missing, the store's installation id; a store without one takes
 * `adopt` when given (an import carrying its source store's id).
 */
export function sqliteInstallationId(db: Database.Database, clock: () => number, adopt?: string): string {
  db.exec(`CREATE TABLE IF NOT EXISTS installation (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    id TEXT NOT NULL,
    created INTEGER NOT NULL
  )`);
  db.prepare('INSERT OR IGNORE INTO installation (one, id, created) VALUES (1, ?, ?)').run(adopt ?? newInstallationId(), clock());
  return (db.prepare('SELECT id FROM installation WHERE one = 1').get() as { id: string }).id;
}

/** The store's installation id without creating one (undefined: no server has asked yet). */
export function sqliteInstallationPeek(db: Database.Database): string | undefined {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'installation'").get();
  if (!table) return undefined;
  return (db.prepare('SELECT id FROM installation WHERE one = 1').get() as { id: string } | undefined)?.id;
}
