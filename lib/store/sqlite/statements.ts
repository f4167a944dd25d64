/**
 * Prepared statements for SQL built from a filter or a patch. The set of distinct texts is
 * small (which filters and patch fields are given, how many states), so they are kept.
 */
import type Database from 'better-sqlite3';

/** Value bound to a `?`. */
export type SqlValue = string | number | null;

/** A prepared-statement cache keyed by SQL text. */
export class StatementCache {
  private readonly cache = new Map<string, Database.Statement<SqlValue[]>>();

  constructor(private readonly db: Database.Database, private readonly limit = 256) {}

  /** The prepared statement for `sql`, prepared on first use. */
  get(sql: string): Database.Statement<SqlValue[]> {
    let stmt = this.cache.get(sql);
    if (!stmt) {
      // Defensive bound: distinct texts are few, but never let a caller grow this forever.
      if (this.cache.size >= this.limit) this.cache.clear();
      stmt = this.db.prepare<SqlValue[]>(sql);
      this.cache.set(sql, stmt);
    }
    return stmt;
  }
}

/** A WHERE clause from `[condition, ...values]` parts; empty when there are none. */
export function whereClause(parts: Array<[string, ...SqlValue[]]>): { sql: string; params: SqlValue[] } {
  if (parts.length === 0) return { sql: '', params: [] };
  return {
    sql: ` WHERE ${parts.map(([cond]) => cond).join(' AND ')}`,
    params: parts.flatMap(([, ...values]) => values),
  };
}

/**
 * `fn` as a BEGIN IMMEDIATE transaction: it takes the write lock before its first read, so two
 * processes never race a read-modify-write (nested inside another transaction: a savepoint).
 */
export function immediate<A extends unknown[], R>(db: Database.Database, fn: (...args: A) => R): (...args: A) => R {
  const tx = db.transaction(fn);
  return (...args) => tx.immediate(...args);
}
