/**
 * Node and node request records ↔ znode JSON, with Nodepool's field names (`state`,
 * `state_time`, `allocated_to`, `node_types`, `declined_by`, `requestor`, …) so Zuul reads what
 * it expects; lib/store/zookeeper/records.ts says the rules.
 */
import { Fields } from '../corrupt.js';
import {
  NODE_STATES, REQUEST_STATES, type NodeRecord, type NodeRequestRecord, type NodeResources,
} from '../models.js';
import { clone, createdOf, str, strList, toMs, toSeconds, type Json } from './records.js';

/** A node's JSON: Nodepool's fields, then ours. */
export function nodeJson(n: NodeRecord): Json {
  return {
    state: n.state,
    state_time: toSeconds(n.stateTime),
    created_time: toSeconds(n.created),
    provider: n.provider,
    pool: n.pool,
    type: n.labels,
    launcher: n.launcher,
    allocated_to: n.allocatedTo,
    hostname: n.hostname,
    interface_ip: n.interfaceIp,
    public_ipv4: n.publicIpv4,
    public_ipv6: n.publicIpv6,
    private_ipv4: n.privateIpv4,
    connection_type: n.connectionType,
    connection_port: n.connectionPort,
    ssh_port: n.connectionPort,
    username: n.username,
    host_keys: n.hostKeys,
    external_id: n.externalId,
    cloud: n.cloud,
    region: n.region,
    az: n.az,
    image_id: n.image,
    resources: n.resources,
    attributes: n.attributes,
    comment: n.holdReason,
    // Nodepool's hold_expiration is a duration from state_time; ours is a point in time, under its own name.
    hold_expiration: holdDuration(n.holdExpiration, n.stateTime),
    hold_expires_at: n.holdExpiration === null ? null : toSeconds(n.holdExpiration),
    hold_job: n.holdJob ?? null,
    // Zuul passes an explicit null to Ansible as None; absent or `auto` is Ansible's discovery.
    python_path: n.pythonPath ?? 'auto',
    shell_type: n.shellType ?? null,
    slot: n.slot ?? null,
    host_id: n.hostId ?? null,
    tenant_name: n.tenantName ?? null,
    requestor: n.requestor ?? null,
    driver_data: n.driverData ?? null,
    user_data: n.userData ?? null,
    reason: n.reason,
    consumer_session: n.consumerSession,
    handed_off: n.handedOff,
    // Ours (issue 14 §2): the upload a validation node validates.
    validates_upload: n.validatesUpload ?? null,
  };
}

/**
 * Nodepool's `hold_expiration` for a point in time: whole seconds from `state_time`, at least 1
 * (0 and null mean "no expiration" to Nodepool), or null when the hold does not expire.
 */
function holdDuration(expiresAt: number | null, stateTime: number): number | null {
  return expiresAt === null ? null : Math.max(1, Math.round((expiresAt - stateTime) / 1000));
}

/**
 * When a held node expires (epoch ms): ours (`hold_expires_at`, a point in time) while
 * `hold_expiration` is still the duration we wrote with it; else Nodepool's and Zuul's
 * `hold_expiration` (seconds the hold lasts from `state_time`: a consumer that wrote a new one
 * is read as it meant); else never.
 */
function holdExpirationOf(j: Json): number | null {
  const duration = typeof j.hold_expiration === 'number' ? j.hold_expiration : null;
  if (typeof j.hold_expires_at === 'number') {
    const ours = toMs(j.hold_expires_at);
    if (duration === null || duration === holdDuration(ours, toMs(j.state_time))) return ours;
  }
  if (duration !== null && duration > 0) return toMs(j.state_time) + Math.round(duration * 1000);
  return null;
}

/**
 * Thrown: CorruptRecordError when the JSON is not a node's: no known state, no time
 * (`created_time`, else `state_time`), no `provider` or no `type`.
 */
export function nodeFromJson(id: string, j: Json): NodeRecord {
  const f: Fields = new Fields(j, 'node', id);
  const port = f.optNumber('connection_port') ?? f.optNumber('ssh_port') ?? 22;
  const state = f.state('state', NODE_STATES);
  const stateTime = f.seconds('state_time');
  const created = createdOf(f, stateTime);
  const provider = f.optStr('provider');
  if (provider === null) f.fail('no provider');
  const labels = typeof j.type === 'string' ? [j.type] : f.strList('type', true);
  f.optObject('resources');
  f.optObject('attributes');
  f.optStr('allocated_to');
  f.optNumber('hold_expires_at');
  return {
    id,
    state,
    stateTime,
    created,
    provider,
    pool: str(j.pool) ?? '',
    labels,
    launcher: str(j.launcher),
    allocatedTo: str(j.allocated_to),
    hostname: str(j.hostname),
    interfaceIp: str(j.interface_ip),
    publicIpv4: str(j.public_ipv4),
    publicIpv6: str(j.public_ipv6),
    privateIpv4: str(j.private_ipv4),
    connectionType: str(j.connection_type) ?? 'ssh',
    connectionPort: port,
    username: str(j.username),
    hostKeys: strList(j.host_keys),
    externalId: str(j.external_id),
    cloud: str(j.cloud),
    region: str(j.region),
    az: str(j.az),
    image: str(j.image_id),
    resources: j.resources ? clone(j.resources as NodeResources) : null,
    attributes: j.attributes && typeof j.attributes === 'object' ? clone(j.attributes as Record<string, string>) : {},
    reason: str(j.reason),
    holdReason: str(j.comment),
    holdExpiration: holdExpirationOf(j),
    consumerSession: str(j.consumer_session),
    handedOff: j.handed_off === true,
    validatesUpload: str(j.validates_upload),
    pythonPath: str(j.python_path) ?? 'auto',
    shellType: str(j.shell_type),
    tenantName: str(j.tenant_name),
    requestor: str(j.requestor),
    driverData: j.driver_data === undefined ? null : clone(j.driver_data),
    userData: j.user_data === undefined ? null : clone(j.user_data),
    holdJob: str(j.hold_job),
    slot: typeof j.slot === 'number' ? j.slot : null,
    hostId: str(j.host_id),
  };
}

/**
 * A node request's JSON (priority is in the id; an ephemeral request's session is its owner).
 * Updates merge it into the stored JSON, so fields only a consumer writes (Zuul's
 * `relative_priority`, `event_id`, `tenant_name`, `requestor_data`) keep their values: they
 * are written only at create ({@link newRequestJson}).
 */
export function requestJson(r: NodeRequestRecord): Json {
  return {
    state: r.state,
    state_time: toSeconds(r.stateTime),
    node_types: r.labels,
    nodes: r.nodes,
    declined_by: r.declinedBy,
    reuse: r.reuse,
    requestor: r.requestor,
    provider: r.provider,
    created_time: toSeconds(r.created),
    reason: r.reason,
  };
}

/** A new request's JSON: {@link requestJson} with the fields a consumer may change later. */
export function newRequestJson(r: NodeRequestRecord): Json {
  return { ...requestJson(r), relative_priority: r.relativePriority ?? 0, event_id: r.eventId ?? null, tenant_name: r.tenantName ?? null };
}

/**
 * Thrown: CorruptRecordError when the JSON is not a node request's. A `created_time` that is
 * absent or null (Zuul's before it sets one) reads as `state_time`; {@link requestJson}'s
 * caller keeps it as it was (see ZkRequests.update).
 */
export function requestFromJson(id: string, priority: number, ephemeralOwner: string | null, j: Json): NodeRequestRecord {
  const f: Fields = new Fields(j, 'request', id);
  const state = f.state('state', REQUEST_STATES);
  const stateTime = f.seconds('state_time');
  return {
    id,
    priority,
    state,
    stateTime,
    created: createdOf(f, stateTime),
    labels: f.strList('node_types', true),
    requestor: f.optStr('requestor') ?? '',
    reuse: f.optBool('reuse') !== false,
    provider: f.optStr('provider'),
    declinedBy: f.strList('declined_by'),
    nodes: f.strList('nodes'),
    reason: f.optStr('reason'),
    requestorSession: ephemeralOwner,
    tenantName: str(j.tenant_name),
    relativePriority: typeof j.relative_priority === 'number' ? j.relative_priority : 0,
    eventId: str(j.event_id),
  };
}

export const copyNode = (n: NodeRecord): NodeRecord => ({
  ...n, labels: [...n.labels], hostKeys: [...n.hostKeys], resources: n.resources ? { ...n.resources } : null, attributes: { ...n.attributes },
  // A consumer's data may be any JSON: copied only when it is an object or list (rare, small).
  driverData: copyJson(n.driverData), userData: copyJson(n.userData),
});

const copyJson = (v: unknown): unknown => (v !== null && typeof v === 'object' ? structuredClone(v) : v ?? null);

export const copyRequest = (r: NodeRequestRecord): NodeRequestRecord => ({
  ...r, labels: [...r.labels], declinedBy: [...r.declinedBy], nodes: [...r.nodes],
});
