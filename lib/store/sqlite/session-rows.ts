/**
 * Row ↔ record mapping of the SQLite store's `sessions`, `locks` and `launchers` tables.
 * Every mapping builds a fresh object.
 */
import type { LauncherRecord, LockRecord, PoolStandingRecord, SessionRecord } from '../models.js';
import { standingFrom, withStanding } from '../pool-standing.js';
import { Columns } from './columns.js';

/** A row of `sessions`. */
export interface SessionRow {
  id: string;
  owner: string;
  hostname: string;
  pid: number;
  created: number;
  renewed: number;
  ttl_ms: number;
}

/** Maps a `sessions` row to a fresh record. */
export function sessionFromRow(r: SessionRow): SessionRecord {
  return { id: r.id, owner: r.owner, hostname: r.hostname, pid: r.pid, created: r.created, renewed: r.renewed, ttlMs: r.ttl_ms };
}

/** A row of `locks` joined with whether its holder is live (1/0). */
export interface LockRow {
  resource: string;
  session_id: string;
  acquired: number;
  live: number;
}

/** Maps a `locks` row to a fresh record. */
export function lockFromRow(r: LockRow): LockRecord {
  return { resource: r.resource, sessionId: r.session_id, acquired: r.acquired, live: r.live !== 0 };
}

/** A row of `launchers`. */
export interface LauncherRow {
  id: string;
  session_id: string;
  provider: string;
  pool: string;
  supported_labels: string;
  registered: number;
  priority: number;
  paused: number;
  /** JSON; NULL when none was published. */
  standing: string | null;
}

/** Maps a `launchers` row to a fresh record. Thrown: CorruptRecordError. */
export function launcherFromRow(r: LauncherRow): LauncherRecord {
  const c = new Columns(r, 'launcher', r.id);
  return {
    id: r.id,
    sessionId: r.session_id,
    provider: r.provider,
    pool: r.pool,
    supportedLabels: c.strList('supported_labels'),
    registered: r.registered,
    priority: r.priority,
    paused: r.paused !== 0,
    ...withStanding(parsedStanding(r.standing)),
  };
}

/** The standing in a `standing` column, or undefined when there is none or it is not a whole standing (see pool-standing.ts). */
function parsedStanding(text: string | null): PoolStandingRecord | undefined {
  if (text === null) return undefined;
  try {
    return standingFrom(JSON.parse(text));
  } catch {
    return undefined;
  }
}
