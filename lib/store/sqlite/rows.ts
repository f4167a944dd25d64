/**
 * Row ↔ record mapping for the SQLite store: snake_case columns, JSON kept as TEXT. Every
 * mapping builds a fresh object, so no record handed out shares state with another.
 */
import { IMAGE_FIELD_KEYS, imageFieldsOf, type ImageFields } from '../image-fields.js';
import { CorruptRecordError, StoreError } from '../../errors.js';
import { corruptOf, Fields, parseJson, type CorruptKind, type CorruptLog, type CorruptRecord } from '../corrupt.js';
import {
  BUILD_STATES, NODE_STATES, REQUEST_STATES, UPLOAD_STATES,
  type BuildRecord, type BuildState, type ImageFileInfo, type JobProgress, type LauncherRecord,
  type LockRecord, type NodeRecord, type NodeRequestRecord, type NodeResources, type NodeState,
  type PauseRecord, type RequestState, type SessionRecord, type UploadProgress, type UploadRecord, type UploadState,
} from '../models.js';

/** A row of `builds`. */
export interface BuildRow {
  id: string;
  diskimage: string;
  state: string;
  state_time: number;
  created: number;
  builder_hostname: string | null;
  builder_id: string | null;
  formats: string;
  files: string;
  reason: string | null;
  progress: string | null;
  image_fields: string | null;
}

/** A row of `uploads`. */
export interface UploadRow {
  id: string;
  build_id: string;
  diskimage: string;
  provider: string;
  image_name: string;
  state: string;
  state_time: number;
  created: number;
  external_id: string | null;
  external_name: string | null;
  format: string | null;
  reason: string | null;
  progress: string | null;
  image_fields: string | null;
}

/** A row of `pauses`; `provider` is '' for a diskimage-wide pause (NULL is not unique in a key). */
export interface PauseRow {
  diskimage: string;
  provider: string;
  since: number;
  reason: string | null;
}

/** The `provider` column value of a diskimage-wide pause. */
export const WHOLE_DISKIMAGE = '';

/** Parses a JSON column; a column that does not parse is a StoreError naming the record. */
export function fromJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new StoreError(`${what} holds invalid JSON`, { cause });
  }
}

/** Serialises a value for a JSON column. Thrown: StoreError when it has no JSON form. */
export function toJson(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new StoreError(`${what} cannot be stored as JSON`, { cause });
  }
  if (text === undefined) throw new StoreError(`${what} cannot be stored as JSON (got ${typeof value})`);
  return text;
}

/** JSON for a nullable column: null stays SQL NULL. */
export function toJsonOrNull(value: unknown, what: string): string | null {
  return value === null ? null : toJson(value, what);
}

/**
 * Checked reads of a row's columns (SQLite keeps any value in any column, and another writer
 * may have written one): JSON columns must parse into the expected shape, states be known,
 * times be numbers. Thrown: CorruptRecordError.
 */
class Columns {
  private readonly f: Fields;

  constructor(private readonly row: object, readonly kind: CorruptKind, readonly id: string) {
    this.f = new Fields(row as Record<string, unknown>, kind, id);
  }

  /** A state column from `states`. */
  state<S extends string>(states: readonly S[]): S {
    return this.f.state('state', states);
  }

  /** A time column (epoch ms). */
  time(col: string): number {
    const v = (this.row as Record<string, unknown>)[col];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.f.fail(`${col} is ${v === null ? 'null' : typeof v}, expected a time`);
    return v;
  }

  /** A JSON column read with `check` (which gets Fields over `{ value }`). */
  json<T>(col: string, check: (f: Fields, key: 'value') => T): T {
    const text = (this.row as Record<string, unknown>)[col];
    if (typeof text !== 'string') return check(new Fields({ value: text }, this.kind, this.id), 'value');
    const value = parseJson(text, this.kind, this.id, col);
    return check(new Fields({ value }, this.kind, this.id), 'value');
  }

  /** A JSON column holding a list of strings. */
  strList(col: string): string[] {
    return this.json(col, (f, k) => [...f.strList(k, true)]);
  }
}

/** Checked progress: null, or an object with a numerator and a denominator. */
function progressCol<T>(c: Columns, col: string): T | null {
  return c.json(col, (f, k) => {
    const p = f.optObject(k);
    if (p === null) return null;
    if (typeof p.numerator !== 'number' || typeof p.denominator !== 'number') f.fail(`${col} has no numerator and denominator`);
    return p as unknown as T;
  });
}

/** Maps a `builds` row to a fresh record. Thrown: CorruptRecordError. */
export function buildFromRow(r: BuildRow): BuildRecord {
  const c = new Columns(r, 'build', r.id);
  return {
    id: r.id,
    diskimage: r.diskimage,
    state: c.state(BUILD_STATES) as BuildState,
    stateTime: c.time('state_time'),
    created: c.time('created'),
    builderHostname: r.builder_hostname,
    builderId: r.builder_id,
    formats: c.strList('formats'),
    files: c.json('files', (f, k) => {
      const files = f.objectList(k);
      for (const file of files) {
        if (typeof file.format !== 'string' || typeof file.size !== 'number' || typeof file.sha256 !== 'string') f.fail('files holds an entry without format, size and sha256');
      }
      return files as unknown as ImageFileInfo[];
    }),
    reason: r.reason,
    progress: progressCol<JobProgress>(c, 'progress'),
    ...imageFieldsCol(c, r.image_fields),
  };
}

/** The `image_fields` column of a build or upload: the fields it holds (each a string or null). */
function imageFieldsCol(c: Columns, text: string | null): ImageFields {
  if (text === null) return {};
  return c.json('image_fields', (f, k) => {
    const o = f.optObject(k) ?? {};
    const out: ImageFields = {};
    for (const key of IMAGE_FIELD_KEYS) {
      if (!(key in o)) continue;
      const v = o[key];
      if (typeof v !== 'string' && v !== null) f.fail(`image_fields.${key} is not a string or null`);
      out[key] = v as string | null;
    }
    return out;
  });
}

/** The `image_fields` value of a record or new record: NULL when it has none of them. */
export function imageFieldsValue(r: ImageFields, what: string): string | null {
  const out = imageFieldsOf(r);
  return Object.keys(out).length === 0 ? null : toJson(out, `${what} image fields`);
}

/** Maps an `uploads` row to a fresh record. Thrown: CorruptRecordError. */
export function uploadFromRow(r: UploadRow): UploadRecord {
  const c = new Columns(r, 'upload', r.id);
  return {
    id: r.id,
    buildId: r.build_id,
    diskimage: r.diskimage,
    provider: r.provider,
    imageName: r.image_name,
    state: c.state(UPLOAD_STATES) as UploadState,
    stateTime: c.time('state_time'),
    created: c.time('created'),
    externalId: r.external_id,
    externalName: r.external_name,
    format: r.format,
    reason: r.reason,
    progress: progressCol<UploadProgress>(c, 'progress'),
    ...imageFieldsCol(c, r.image_fields),
  };
}

/** The id a pause is listed under: `<diskimage>` or `<diskimage>/<provider>`. */
export const pauseRowId = (r: PauseRow): string => (r.provider === WHOLE_DISKIMAGE ? r.diskimage : `${r.diskimage}/${r.provider}`);

/** Maps a `pauses` row to a fresh record. Thrown: CorruptRecordError. */
export function pauseFromRow(r: PauseRow): PauseRecord {
  const c = new Columns(r, 'pause', pauseRowId(r));
  return {
    diskimage: r.diskimage,
    provider: r.provider === WHOLE_DISKIMAGE ? null : r.provider,
    since: c.time('since'),
    reason: r.reason,
  };
}

/**
 * A pause row as a pause even when corrupt (the row is the operator's intent): then `since` is
 * 0 and the reason says it is corrupt, and `corrupt` describes it.
 */
export function pauseFromRowLenient(r: PauseRow): { pause: PauseRecord; corrupt?: CorruptRecord } {
  try {
    return { pause: pauseFromRow(r) };
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    const provider = r.provider === WHOLE_DISKIMAGE ? null : r.provider;
    const corrupt = corruptOf(err, { diskimage: r.diskimage, provider });
    return { pause: { diskimage: r.diskimage, provider, since: 0, reason: `corrupt pause record (${corrupt.reason})` }, corrupt };
  }
}

/**
 * Maps rows with `map`, leaving out corrupt ones (reported to `log` once per row content).
 * `where` adds the diskimage and provider to a corrupt record's description.
 */
export function checkedRows<R extends object, T>(rows: readonly R[], map: (r: R) => T, log: CorruptLog,
  where: (r: R) => { diskimage?: string; provider?: string | null } = () => ({})): T[] {
  const out: T[] = [];
  for (const r of rows) {
    try {
      out.push(map(r));
    } catch (err) {
      if (!(err instanceof CorruptRecordError)) throw err;
      log.report(corruptOf(err, where(r)), JSON.stringify(r));
    }
  }
  return out;
}

/** The corrupt ones among `rows`. */
export function corruptRows<R extends object>(rows: readonly R[], map: (r: R) => unknown,
  where: (r: R) => { diskimage?: string; provider?: string | null } = () => ({})): CorruptRecord[] {
  const out: CorruptRecord[] = [];
  for (const r of rows) {
    try {
      map(r);
    } catch (err) {
      if (!(err instanceof CorruptRecordError)) throw err;
      out.push(corruptOf(err, where(r)));
    }
  }
  return out;
}

/** Thrown: StoreError when `state` is not a build state (the CLI may pass operator input). */
export function checkBuildState(state: string, what: string): void {
  if (!(BUILD_STATES as readonly string[]).includes(state)) {
    throw new StoreError(`${what}: unknown build state ${JSON.stringify(state)} (expected one of ${BUILD_STATES.join(', ')})`);
  }
}

/** Thrown: StoreError when `state` is not an upload state. */
export function checkUploadState(state: string, what: string): void {
  if (!(UPLOAD_STATES as readonly string[]).includes(state)) {
    throw new StoreError(`${what}: unknown upload state ${JSON.stringify(state)} (expected one of ${UPLOAD_STATES.join(', ')})`);
  }
}

/** A row of `nodes`. */
export interface NodeRow {
  id: string;
  state: string;
  state_time: number;
  created: number;
  provider: string;
  pool: string;
  labels: string;
  launcher: string | null;
  allocated_to: string | null;
  hostname: string | null;
  interface_ip: string | null;
  public_ipv4: string | null;
  public_ipv6: string | null;
  private_ipv4: string | null;
  connection_type: string;
  connection_port: number;
  username: string | null;
  host_keys: string;
  external_id: string | null;
  cloud: string | null;
  region: string | null;
  az: string | null;
  image: string | null;
  resources: string | null;
  attributes: string;
  reason: string | null;
  hold_reason: string | null;
  hold_expiration: number | null;
  consumer_session: string | null;
  handed_off: number;
  validates_upload: string | null;
  python_path: string | null;
  shell_type: string | null;
  tenant_name: string | null;
  requestor: string | null;
  driver_data: string | null;
  user_data: string | null;
  hold_job: string | null;
  slot: number | null;
  host_id: string | null;
}

/** The node fields a row stores beside id, state_time and created. */
export type NodeFields = Omit<NodeRecord, 'id' | 'stateTime' | 'created'>;

/** How a node field is stored: as it is, or as JSON (`jsonOrNull` keeps null as SQL NULL). */
type ColumnCodec = 'plain' | 'json' | 'jsonOrNull' | 'bool';

/** Column and codec of every changeable node field: one table for inserts and patches. */
export const NODE_COLUMNS: { readonly [K in keyof NodeFields]-?: readonly [column: string, codec: ColumnCodec] } = {
  state: ['state', 'plain'],
  provider: ['provider', 'plain'],
  pool: ['pool', 'plain'],
  labels: ['labels', 'json'],
  launcher: ['launcher', 'plain'],
  allocatedTo: ['allocated_to', 'plain'],
  hostname: ['hostname', 'plain'],
  interfaceIp: ['interface_ip', 'plain'],
  publicIpv4: ['public_ipv4', 'plain'],
  publicIpv6: ['public_ipv6', 'plain'],
  privateIpv4: ['private_ipv4', 'plain'],
  connectionType: ['connection_type', 'plain'],
  connectionPort: ['connection_port', 'plain'],
  username: ['username', 'plain'],
  hostKeys: ['host_keys', 'json'],
  externalId: ['external_id', 'plain'],
  cloud: ['cloud', 'plain'],
  region: ['region', 'plain'],
  az: ['az', 'plain'],
  image: ['image', 'plain'],
  resources: ['resources', 'jsonOrNull'],
  attributes: ['attributes', 'json'],
  reason: ['reason', 'plain'],
  holdReason: ['hold_reason', 'plain'],
  holdExpiration: ['hold_expiration', 'plain'],
  consumerSession: ['consumer_session', 'plain'],
  handedOff: ['handed_off', 'bool'],
  validatesUpload: ['validates_upload', 'plain'],
  pythonPath: ['python_path', 'plain'],
  shellType: ['shell_type', 'plain'],
  tenantName: ['tenant_name', 'plain'],
  requestor: ['requestor', 'plain'],
  driverData: ['driver_data', 'jsonOrNull'],
  userData: ['user_data', 'jsonOrNull'],
  holdJob: ['hold_job', 'plain'],
  slot: ['slot', 'plain'],
  hostId: ['host_id', 'plain'],
};

/** The value a node field is stored as. Thrown: StoreError when a JSON field has no JSON form. */
export function nodeColumnValue(field: keyof NodeFields, value: unknown, what: string): string | number | null {
  const codec = NODE_COLUMNS[field][1];
  if (codec === 'json') return toJson(value, `${what} ${field}`);
  if (codec === 'jsonOrNull') return toJsonOrNull(value, `${what} ${field}`);
  if (codec === 'bool') {
    if (typeof value !== 'boolean') throw new StoreError(`${what} ${field}: expected true or false, got ${typeof value}`);
    return value ? 1 : 0;
  }
  if (value === null || typeof value === 'string' || typeof value === 'number') return value;
  throw new StoreError(`${what} ${field}: expected a string, number or null, got ${typeof value}`);
}

/** Maps a `nodes` row to a fresh record. Thrown: CorruptRecordError. */
export function nodeFromRow(r: NodeRow): NodeRecord {
  const c = new Columns(r, 'node', r.id);
  return {
    id: r.id,
    state: c.state(NODE_STATES) as NodeState,
    stateTime: c.time('state_time'),
    created: c.time('created'),
    provider: r.provider,
    pool: r.pool,
    labels: c.strList('labels'),
    launcher: r.launcher,
    allocatedTo: r.allocated_to,
    hostname: r.hostname,
    interfaceIp: r.interface_ip,
    publicIpv4: r.public_ipv4,
    publicIpv6: r.public_ipv6,
    privateIpv4: r.private_ipv4,
    connectionType: r.connection_type,
    connectionPort: r.connection_port,
    username: r.username,
    hostKeys: c.strList('host_keys'),
    externalId: r.external_id,
    cloud: r.cloud,
    region: r.region,
    az: r.az,
    image: r.image,
    resources: c.json('resources', (f, k) => f.optObject(k) as NodeResources | null),
    attributes: c.json('attributes', (f, k) => {
      const a = f.optObject(k);
      if (a === null) f.fail('attributes is not an object');
      return a as Record<string, string>;
    }),
    reason: r.reason,
    holdReason: r.hold_reason,
    holdExpiration: r.hold_expiration,
    consumerSession: r.consumer_session,
    handedOff: r.handed_off === 1,
    validatesUpload: r.validates_upload,
    // Absent means `auto` to Zuul (its getattr default); a record never says null here.
    pythonPath: r.python_path ?? 'auto',
    shellType: r.shell_type,
    tenantName: r.tenant_name,
    requestor: r.requestor,
    driverData: r.driver_data === null ? null : parseJson(r.driver_data, 'node', r.id, 'driver_data'),
    userData: r.user_data === null ? null : parseJson(r.user_data, 'node', r.id, 'user_data'),
    holdJob: r.hold_job,
    slot: r.slot,
    hostId: r.host_id,
  };
}

/** A row of `node_requests`. */
export interface NodeRequestRow {
  id: string;
  priority: number;
  state: string;
  state_time: number;
  created: number;
  labels: string;
  requestor: string;
  reuse: number;
  provider: string | null;
  declined_by: string;
  nodes: string;
  reason: string | null;
  requestor_session: string | null;
  tenant_name: string | null;
  relative_priority: number;
  event_id: string | null;
}

/** Maps a `node_requests` row to a fresh record. Thrown: CorruptRecordError. */
export function requestFromRow(r: NodeRequestRow): NodeRequestRecord {
  const c = new Columns(r, 'request', r.id);
  return {
    id: r.id,
    priority: r.priority,
    state: c.state(REQUEST_STATES) as RequestState,
    stateTime: c.time('state_time'),
    created: c.time('created'),
    labels: c.strList('labels'),
    requestor: r.requestor,
    reuse: r.reuse !== 0,
    provider: r.provider,
    declinedBy: c.strList('declined_by'),
    nodes: c.strList('nodes'),
    reason: r.reason,
    requestorSession: r.requestor_session,
    tenantName: r.tenant_name,
    relativePriority: r.relative_priority,
    eventId: r.event_id,
  };
}

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
  };
}

/** Thrown: StoreError when `state` is not a node state. */
export function checkNodeState(state: string, what: string): void {
  if (!(NODE_STATES as readonly string[]).includes(state)) {
    throw new StoreError(`${what}: unknown node state ${JSON.stringify(state)} (expected one of ${NODE_STATES.join(', ')})`);
  }
}

/** Thrown: StoreError when `state` is not a node request state. */
export function checkRequestState(state: string, what: string): void {
  if (!(REQUEST_STATES as readonly string[]).includes(state)) {
    throw new StoreError(`${what}: unknown request state ${JSON.stringify(state)} (expected one of ${REQUEST_STATES.join(', ')})`);
  }
}

/** Thrown: StoreError unless `value` is an array of strings. */
export function checkStringList(value: unknown, what: string): void {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new StoreError(`${what}: expected a list of strings, got ${Array.isArray(value) ? 'a list with other values' : typeof value}`);
  }
}

/** `(?, ?, ?)` for an IN list of `n` values (n ≥ 1). */
export function placeholders(n: number): string {
  return `(${Array.from({ length: n }, () => '?').join(', ')})`;
}
