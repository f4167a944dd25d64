/**
 * Sessions and launcher registrations in SQLite: ZooKeeper's sessions and ephemeral nodes as
 * rows with a lease. A session is live while `clock() - renewed <= ttl_ms`; closing or reaping
 * it removes its locks, its launchers and the requests it made ephemeral, in one transaction.
 */
import { randomUUID } from 'node:crypto';
import { CorruptLog, type CorruptRecord } from '../corrupt.js';
import type Database from 'better-sqlite3';
import { StoreError } from '../../errors.js';
import { DEFAULT_POOL_PRIORITY } from '../components.js';
import { checkLauncherPatch } from '../launcher-patch.js';
import type { LauncherPatch, LauncherRecord, PoolStandingRecord, SessionRecord } from '../models.js';
import { standingJson } from '../pool-standing.js';
import { REQUEST_LOCK_PREFIX } from '../lock-names.js';
import { toJson } from '../to-json.js';
import { checkStringList } from '../checks.js';
import { checkedRows, corruptRows } from './columns.js';
import { launcherFromRow, sessionFromRow, type LauncherRow, type SessionRow } from './session-rows.js';
import { immediate } from './statements.js';
import type { NewSession, ReapCounts } from '../store.js';

/** Ids of sessions live at the bound time `?`. */
const LIVE_IDS = '(SELECT id FROM sessions WHERE ? - renewed <= ttl_ms)';
/** Requests whose requestor session is not live at `?` (lapsed or gone). */
const ORPHANED_REQUESTS = `requestor_session IS NOT NULL AND requestor_session NOT IN ${LIVE_IDS}`;

/** Sessions and launchers in a SQLite database. */
export class SqliteSessions {
  private readonly insertStmt: Database.Statement<[string, string, string, number, number, number, number]>;
  private readonly renewStmt: Database.Statement<[number, string]>;
  private readonly getStmt: Database.Statement<[string], SessionRow>;
  private readonly listStmt: Database.Statement<[], SessionRow>;
  private readonly liveStmt: Database.Statement<[number, string], number>;
  private readonly closeStmts: {
    requestLocks: Database.Statement<[string, string]>;
    requests: Database.Statement<[string]>;
    locks: Database.Statement<[string]>;
    launchers: Database.Statement<[string]>;
    session: Database.Statement<[string]>;
  };
  private readonly reapStmts: {
    requestLocks: Database.Statement<[string, number]>;
    requests: Database.Statement<[number]>;
    locks: Database.Statement<[number]>;
    launchers: Database.Statement<[number]>;
    sessions: Database.Statement<[number]>;
  };
  private readonly upsertLauncherStmt: Database.Statement<[string, string, string, string, string, number, ...Array<number | string | null>], LauncherRow>;
  private readonly getLauncherStmt: Database.Statement<[string], LauncherRow>;
  private readonly updateLauncherStmt: Database.Statement<[string, number, number, string | null, string], LauncherRow>;
  private readonly deleteLauncherStmt: Database.Statement<[string]>;
  private readonly listLaunchersStmt: Database.Statement<[number], LauncherRow>;
  private readonly closeTx: (id: string) => void;
  private readonly reapTx: () => ReapCounts;
  private readonly registerTx: (input: Omit<LauncherRecord, 'registered'>) => LauncherRecord;

  constructor(db: Database.Database, private readonly clock: () => number, private readonly corruptLog = new CorruptLog(undefined)) {
    this.insertStmt = db.prepare(`
      INSERT INTO sessions (id, owner, hostname, pid, created, renewed, ttl_ms) VALUES (?, ?, ?, ?, ?, ?, ?)`);
    this.renewStmt = db.prepare<[number, string]>('UPDATE sessions SET renewed = ? WHERE id = ?');
    this.getStmt = db.prepare<[string], SessionRow>('SELECT * FROM sessions WHERE id = ?');
    this.listStmt = db.prepare<[], SessionRow>('SELECT * FROM sessions ORDER BY created, id');
    this.liveStmt = db.prepare<[number, string], number>('SELECT ? - renewed <= ttl_ms FROM sessions WHERE id = ?').pluck();
    this.closeStmts = {
      requestLocks: db.prepare(`DELETE FROM locks WHERE resource IN (SELECT ? || id FROM node_requests WHERE requestor_session = ?)`),
      requests: db.prepare('DELETE FROM node_requests WHERE requestor_session = ?'),
      locks: db.prepare('DELETE FROM locks WHERE session_id = ?'),
      launchers: db.prepare('DELETE FROM launchers WHERE session_id = ?'),
      session: db.prepare('DELETE FROM sessions WHERE id = ?'),
    };
    this.reapStmts = {
      requestLocks: db.prepare(`DELETE FROM locks WHERE resource IN (SELECT ? || id FROM node_requests WHERE ${ORPHANED_REQUESTS})`),
      requests: db.prepare(`DELETE FROM node_requests WHERE ${ORPHANED_REQUESTS}`),
      locks: db.prepare(`DELETE FROM locks WHERE session_id NOT IN ${LIVE_IDS}`),
      launchers: db.prepare(`DELETE FROM launchers WHERE session_id NOT IN ${LIVE_IDS}`),
      sessions: db.prepare('DELETE FROM sessions WHERE ? - renewed > ttl_ms'),
    };
    // Priority and paused keep their registered values when a refresh does not give them (NULL).
    this.upsertLauncherStmt = db.prepare(`
      INSERT INTO launchers (id, session_id, provider, pool, supported_labels, registered, priority, paused, standing)
      VALUES (?, ?, ?, ?, ?, ?, COALESCE(?, ${DEFAULT_POOL_PRIORITY}), COALESCE(?, 0), ?)
      ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, provider = excluded.provider, pool = excluded.pool,
        supported_labels = excluded.supported_labels, registered = excluded.registered,
        priority = COALESCE(?, launchers.priority), paused = COALESCE(?, launchers.paused),
        standing = COALESCE(excluded.standing, launchers.standing)
      RETURNING *`);
    this.getLauncherStmt = db.prepare<[string], LauncherRow>('SELECT * FROM launchers WHERE id = ?');
    this.updateLauncherStmt = db.prepare<[string, number, number, string | null, string], LauncherRow>(
      'UPDATE launchers SET supported_labels = ?, priority = ?, paused = ?, standing = ? WHERE id = ? RETURNING *');
    this.deleteLauncherStmt = db.prepare<[string]>('DELETE FROM launchers WHERE id = ?');
    this.listLaunchersStmt = db.prepare<[number], LauncherRow>(`
      SELECT l.* FROM launchers l JOIN sessions s ON s.id = l.session_id WHERE ? - s.renewed <= s.ttl_ms ORDER BY l.id`);
    this.closeTx = immediate(db, (id: string) => this.closeNow(id));
    this.reapTx = immediate(db, () => this.reapNow());
    this.registerTx = immediate(db, (input: Omit<LauncherRecord, 'registered'>) => this.registerNow(input));
  }

  /** Opens a session with a random id, renewed now. Thrown: StoreError for a TTL that is not a positive integer. */
  open(input: NewSession): SessionRecord {
    if (!Number.isInteger(input.ttlMs) || input.ttlMs <= 0) {
      throw new StoreError(`opening a session for ${input.owner}: ttlMs must be a positive integer, got ${String(input.ttlMs)}`);
    }
    if (!Number.isInteger(input.pid)) throw new StoreError(`opening a session for ${input.owner}: pid must be an integer, got ${String(input.pid)}`);
    const now = this.clock();
    const id = randomUUID();
    this.insertStmt.run(id, input.owner, input.hostname, input.pid, now, now, input.ttlMs);
    return { id, owner: input.owner, hostname: input.hostname, pid: input.pid, created: now, renewed: now, ttlMs: input.ttlMs };
  }

  /** Extends the lease to now; false when the session row is gone. */
  renew(id: string): boolean {
    return this.renewStmt.run(this.clock(), id).changes > 0;
  }

  /** Removes the session with its locks, launchers and ephemeral requests. Idempotent. */
  closeSession(id: string): void {
    this.closeTx(id);
  }

  /** The session (live or lapsed), or undefined. */
  get(id: string): SessionRecord | undefined {
    const row = this.getStmt.get(id);
    return row ? sessionFromRow(row) : undefined;
  }

  /** Every session, live or lapsed, oldest first. */
  list(): SessionRecord[] {
    return this.listStmt.all().map(sessionFromRow);
  }

  /** Whether the session exists and is within its TTL. */
  isLive(id: string): boolean {
    return this.liveStmt.get(this.clock(), id) === 1;
  }

  /** Removes lapsed sessions and whatever belongs to a session that is lapsed or gone. */
  reapSessions(): ReapCounts {
    return this.reapTx();
  }

  /** Registers (or refreshes) a launcher. Thrown: StoreError when its session is not live. */
  registerLauncher(input: Omit<LauncherRecord, 'registered'>): LauncherRecord {
    return this.registerTx(input);
  }

  /** Changes a registered launcher; undefined when there is none. Thrown: StoreError for a bad value. */
  updateLauncher(id: string, patch: LauncherPatch): LauncherRecord | undefined {
    const row = this.getLauncherStmt.get(id);
    if (!row) return undefined;
    const cur = launcherFromRow(row);
    const what = `updating launcher ${id}`;
    checkLauncherPatch(patch, what);
    const labels = patch.supportedLabels ?? cur.supportedLabels;
    const next = this.updateLauncherStmt.get(toJson(labels, `${what}: supportedLabels`), patch.priority ?? cur.priority ?? DEFAULT_POOL_PRIORITY,
      (patch.paused ?? cur.paused ?? false) ? 1 : 0, standingText(patch.standing ?? cur.standing), id);
    return next ? launcherFromRow(next) : undefined;
  }

  /** Removes a launcher registration (nothing when there is none). */
  unregisterLauncher(id: string): void {
    this.deleteLauncherStmt.run(id);
  }

  /** Launchers whose session is live, by id. */
  listLaunchers(): LauncherRecord[] {
    return checkedRows(this.listLaunchersStmt.all(this.clock()), launcherFromRow, this.corruptLog);
  }

  /** Registrations of live launchers whose rows do not validate, by id. */
  corruptLaunchers(): CorruptRecord[] {
    return corruptRows(this.listLaunchersStmt.all(this.clock()), launcherFromRow);
  }

  private closeNow(id: string): void {
    this.closeStmts.requestLocks.run(REQUEST_LOCK_PREFIX, id);
    this.closeStmts.requests.run(id);
    this.closeStmts.locks.run(id);
    this.closeStmts.launchers.run(id);
    this.closeStmts.session.run(id);
  }

  private reapNow(): ReapCounts {
    const now = this.clock();
    // Request locks go before their requests (the subquery needs the rows), and both before sessions.
    const requestLocks = this.reapStmts.requestLocks.run(REQUEST_LOCK_PREFIX, now).changes;
    const requests = this.reapStmts.requests.run(now).changes;
    const locks = requestLocks + this.reapStmts.locks.run(now).changes;
    const launchers = this.reapStmts.launchers.run(now).changes;
    const sessions = this.reapStmts.sessions.run(now).changes;
    return { sessions, locks, launchers, requests };
  }

  private registerNow(input: Omit<LauncherRecord, 'registered'>): LauncherRecord {
    if (this.liveStmt.get(this.clock(), input.sessionId) !== 1) {
      throw new StoreError(`cannot register launcher ${input.id}: session ${input.sessionId} is not live (lapsed, closed or never opened)`);
    }
    checkStringList(input.supportedLabels, `registering launcher ${input.id}: supportedLabels`);
    checkLauncherPatch(input, `registering launcher ${input.id}`);
    const priority = input.priority ?? null;
    const paused = input.paused === undefined ? null : input.paused ? 1 : 0;
    const row = this.upsertLauncherStmt.get(input.id, input.sessionId, input.provider, input.pool,
      toJson(input.supportedLabels, `launcher ${input.id} supportedLabels`), this.clock(), priority, paused, standingText(input.standing), priority, paused);
    if (!row) throw new StoreError(`launcher ${input.id} was not registered`);
    return launcherFromRow(row);
  }
}

/** A standing as the `standing` column keeps it (NULL for none). */
const standingText = (s: PoolStandingRecord | undefined): string | null => (s ? JSON.stringify(standingJson(s)) : null);
