/**
 * Row ↔ record mapping of the SQLite store's `nodes` and `node_requests` tables, and the one
 * table of node columns that inserts and patches share. Every mapping builds a fresh object.
 */
import { StoreError } from '../../errors.js';
import { parseJson } from '../corrupt.js';
import {
  NODE_STATES, REQUEST_STATES,
  type NodeRecord, type NodeRequestRecord, type NodeResources, type NodeState, type RequestState,
} from '../models.js';
import { toJson } from '../to-json.js';
import { Columns, toJsonOrNull } from './columns.js';

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
