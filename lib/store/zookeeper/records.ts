/**
 * Records ↔ znode JSON, with Nodepool's field names (`state`, `state_time` in float seconds,
 * `builder`, `builder_id`, `formats` comma-joined, `external_id`, `external_name`, `type`,
 * `allocated_to`, `node_types`, `declined_by`, `requestor`, …) so zk-shell and Zuul read what
 * they expect. Fields Nodepool has no word for are added under names of our own; none of
 * Nodepool's is renamed. Ids, diskimage, build and provider come from the path; the session
 * of an ephemeral record is its znode's owner.
 *
 * This module: the JSON codec and field readers both record families share (image-records.ts,
 * node-records.ts), and the launcher and session records.
 */
import { CorruptRecordError, StoreError } from '../../errors.js';
import { DEFAULT_POOL_PRIORITY } from '../components.js';
import { Fields, type CorruptKind } from '../corrupt.js';
import type { JobProgress, LauncherRecord, SessionRecord } from '../models.js';
import { standingFrom, standingJson, withStanding } from '../pool-standing.js';
import { toJson } from '../to-json.js';

/** A JSON object as stored in a znode. */
export type Json = Record<string, unknown>;

/** Epoch ms → Nodepool's float seconds. */
export const toSeconds = (ms: number): number => ms / 1000;
/** Nodepool's float seconds → epoch ms (exact for the ms values we wrote). */
export const toMs = (s: unknown): number => (typeof s === 'number' ? Math.round(s * 1000) : 0);

/** Serialises a znode's JSON. Thrown: StoreError when a value has no JSON form. */
export function encode(value: unknown, what: string): Buffer {
  return Buffer.from(toJson(value, what));
}

/**
 * Parses a record's JSON object (empty data is `{}`). Thrown: CorruptRecordError when it is not
 * a JSON object.
 */
export function decodeRecord(data: Buffer, kind: CorruptKind, id: string): Json {
  if (data.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(data.toString('utf8'));
  } catch {
    throw new CorruptRecordError(kind, id, 'its data is not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new CorruptRecordError(kind, id, 'its data is JSON but not an object');
  return v as Json;
}

/** Parses a znode's JSON object; empty data is `{}`. Thrown: StoreError for anything else. */
export function decode(data: Buffer, what: string): Json {
  if (data.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(data.toString('utf8'));
  } catch (cause) {
    throw new StoreError(`${what} holds invalid JSON`, { cause });
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new StoreError(`${what} holds JSON that is not an object`);
  return v as Json;
}

/** Lenient readers of optional fields (a missing or mistyped one reads as null or empty). */
export const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
export const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * When a record was created: `created_time`, else (Nodepool writes none for builds and uploads;
 * Zuul may leave a request's null) `state_time`. Thrown: CorruptRecordError when neither is a
 * number, or either holds something else.
 */
export function createdOf(f: Fields, stateTime: number): number {
  return f.optSeconds('created_time') ?? stateTime;
}

/** Checked progress (`{numerator, denominator, …}`), or null. */
export function progressOf<T extends JobProgress>(f: Fields): T | null {
  const p = f.optObject('progress');
  if (p === null) return null;
  if (typeof p.numerator !== 'number' || typeof p.denominator !== 'number') f.fail('progress has no numerator and denominator');
  return clone(p) as unknown as T;
}
/** A deep copy of parsed JSON. */
export const clone = <T>(v: T): T => structuredClone(v);

/** A launcher's JSON (Nodepool's `id`, `provider_name`, `supported_labels`, `priority`, `paused`, then ours). */
export function launcherJson(l: LauncherRecord): Json {
  return {
    id: l.id, provider_name: l.provider, supported_labels: l.supportedLabels, priority: l.priority ?? DEFAULT_POOL_PRIORITY,
    paused: l.paused ?? false, pool: l.pool, registered_time: toSeconds(l.registered),
    ...(l.standing ? { standing: standingJson(l.standing) as Json } : {}),
  };
}

/** Thrown: CorruptRecordError when the JSON is not a launcher's. */
export function launcherFromJson(id: string, sessionId: string, j: Json): LauncherRecord {
  const f: Fields = new Fields(j, 'launcher', id);
  return {
    id,
    sessionId,
    provider: f.optStr('provider_name') ?? '',
    pool: f.optStr('pool') ?? '',
    supportedLabels: f.strList('supported_labels'),
    registered: toMs(j.registered_time),
    priority: typeof j.priority === 'number' ? j.priority : DEFAULT_POOL_PRIORITY,
    paused: j.paused === true,
    ...withStanding(standingFrom(j.standing)),
  };
}

/** A session's JSON (its znode is ephemeral: it exists while the session lives). */
export function sessionJson(s: Omit<SessionRecord, 'id' | 'renewed'>): Json {
  return { owner: s.owner, hostname: s.hostname, pid: s.pid, created_time: toSeconds(s.created), ttl_ms: s.ttlMs };
}

/** `renewed` is `now`: the znode exists only while ZooKeeper keeps the session alive. */
export function sessionFromJson(id: string, now: number, j: Json): SessionRecord {
  return {
    id,
    owner: str(j.owner) ?? '',
    hostname: str(j.hostname) ?? '',
    pid: typeof j.pid === 'number' ? j.pid : 0,
    created: toMs(j.created_time),
    renewed: now,
    ttlMs: typeof j.ttl_ms === 'number' ? j.ttl_ms : 0,
  };
}

/** A ZooKeeper stat time (8-byte big-endian ms) as a number. */
export function statTime(b: Buffer): number {
  return Number(b.readBigInt64BE(0));
}

/** An ephemeral owner as a session id, or null for a persistent znode. */
export function ownerOf(b: Buffer): string | null {
  const hex = b.toString('hex');
  return hex === '0000000000000000' ? null : hex;
}
