/**
 * The installation id of a SQLite store, in a one-row table `installation`. The table is made
 * on the first call (not by a migration), so only the server, which asks for the id, ever
 * writes it: a read-only CLI command leaves the file as it was. Concurrent first calls of two
 * processes agree: the first INSERT wins, the other reads it.
 */
import type Database from 'better-sqlite3';
import { newInstallationId } from '../installation.js';

/** Reads, creating it once when missing, the store's installation id. */
export function sqliteInstallationId(db: Database.Database, clock: () => number): string {
  db.exec(`CREATE TABLE IF NOT EXISTS installation (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    id TEXT NOT NULL,
    created INTEGER NOT NULL
  )`);
  db.prepare('INSERT OR IGNORE INTO installation (one, id, created) VALUES (1, ?, ?)').run(newInstallationId(), clock());
  return (db.prepare('SELECT id FROM installation WHERE one = 1').get() as { id: string }).id;
}
