/**
 * Named counters that never go back: incremented inside the transaction that inserts the
 * record, so an id is never handed out twice, even across processes or after a delete.
 */
import type Database from 'better-sqlite3';

/** Sequence name of a diskimage's builds. */
export const buildSequence = (diskimage: string): string => `build:${diskimage}`;
/** Sequence name of uploads (one for the whole store). */
export const UPLOAD_SEQUENCE = 'upload';

/** Allocates sequence values; call {@link Sequences.next} inside a write transaction. */
export class Sequences {
  private readonly nextStmt: Database.Statement<[string], { value: number }>;

  constructor(db: Database.Database) {
    this.nextStmt = db.prepare(`
      INSERT INTO sequences (name, value) VALUES (?, 1)
      ON CONFLICT (name) DO UPDATE SET value = value + 1
      RETURNING value`);
  }

  /** The next value of `name`, starting at 1. */
  next(name: string): number {
    return (this.nextStmt.get(name) as { value: number }).value;
  }
}
