/**
 * Row ↔ record mapping for the SQLite store: snake_case columns, JSON kept as TEXT. Every
 * mapping builds a fresh object, so no record handed out shares state with another.
 */
import { StoreError } from '../../errors.js';
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

/** Maps a `builds` row to a fresh record. */
export function buildFromRow(r: BuildRow): BuildRecord {
  const what = `build ${r.id}`;
  return {
    id: r.id,
    diskimage: r.diskimage,
    state: r.state as BuildState,
    stateTime: r.state_time,
    created: r.created,
    builderHostname: r.builder_hostname,
    builderId: r.builder_id,
    formats: fromJson<string[]>(r.formats, `${what} formats`),
    files: fromJson<ImageFileInfo[]>(r.files, `${what} files`),
    reason: r.reason,
    progress: r.progress === null ? null : fromJson<JobProgress>(r.progress, `${what} progress`),
  };
}

/** Maps an `uploads` row to a fresh record. */
export function uploadFromRow(r: UploadRow): UploadRecord {
  return {
    id: r.id,
    buildId: r.build_id,
    diskimage: r.diskimage,
    provider: r.provider,
    imageName: r.image_name,
    state: r.state as UploadState,
    stateTime: r.state_time,
    created: r.created,
    externalId: r.external_id,
    externalName: r.external_name,
    format: r.format,
    reason: r.reason,
    progress: r.progress === null ? null : fromJson<UploadProgress>(r.progress, `upload ${r.id} progress`),
  };
}

/** Maps a `pauses` row to a fresh record. */
export function pauseFromRow(r: PauseRow): PauseRecord {
  return {
    diskimage: r.diskimage,
    provider: r.provider === WHOLE_DISKIMAGE ? null : r.provider,
    since: r.since,
    reason: r.reason,
  };
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

/** Maps a `nodes` row to a fresh record. */
export function nodeFromRow(r: NodeRow): NodeRecord {
  const what = `node ${r.id}`;
  return {
    id: r.id,
    state: r.state as NodeState,
    stateTime: r.state_time,
    created: r.created,
    provider: r.provider,
    pool: r.pool,
    labels: fromJson<string[]>(r.labels, `${what} labels`),
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
    hostKeys: fromJson<string[]>(r.host_keys, `${what} hostKeys`),
    externalId: r.external_id,
    cloud: r.cloud,
    region: r.region,
    az: r.az,
    image: r.image,
    resources: r.resources === null ? null : fromJson<NodeResources>(r.resources, `${what} resources`),
    attributes: fromJson<Record<string, string>>(r.attributes, `${what} attributes`),
    reason: r.reason,
    holdReason: r.hold_reason,
    holdExpiration: r.hold_expiration,
    consumerSession: r.consumer_session,
    handedOff: r.handed_off === 1,
    validatesUpload: r.validates_upload,
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
}

/** Maps a `node_requests` row to a fresh record. */
export function requestFromRow(r: NodeRequestRow): NodeRequestRecord {
  const what = `node request ${r.id}`;
  return {
    id: r.id,
    priority: r.priority,
    state: r.state as RequestState,
    stateTime: r.state_time,
    created: r.created,
    labels: fromJson<string[]>(r.labels, `${what} labels`),
    requestor: r.requestor,
    reuse: r.reuse !== 0,
    provider: r.provider,
    declinedBy: fromJson<string[]>(r.declined_by, `${what} declinedBy`),
    nodes: fromJson<string[]>(r.nodes, `${what} nodes`),
    reason: r.reason,
    requestorSession: r.requestor_session,
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
}

/** Maps a `launchers` row to a fresh record. */
export function launcherFromRow(r: LauncherRow): LauncherRecord {
  return {
    id: r.id,
    sessionId: r.session_id,
    provider: r.provider,
    pool: r.pool,
    supportedLabels: fromJson<string[]>(r.supported_labels, `launcher ${r.id} supportedLabels`),
    registered: r.registered,
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
