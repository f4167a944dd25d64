/**
 * Records ↔ znode JSON, with Nodepool's field names (`state`, `state_time` in float seconds,
 * `builder`, `builder_id`, `formats` comma-joined, `external_id`, `external_name`, `type`,
 * `allocated_to`, `node_types`, `declined_by`, `requestor`, …) so zk-shell and Zuul read what
 * they expect. Fields Nodepool has no word for are added under names of our own; none of
 * Nodepool's is renamed. Ids, diskimage, build and provider come from the path; the session
 * of an ephemeral record is its znode's owner.
 */
import { CorruptRecordError, StoreError } from '../../errors.js';
import { DEFAULT_POOL_PRIORITY } from '../components.js';
import { Fields, type CorruptKind } from '../corrupt.js';
import { IMAGE_FIELD_KEYS, imageFieldsOf as imageFieldsOfRecord, type ImageFields } from '../image-fields.js';
import {
  BUILD_STATES, NODE_STATES, REQUEST_STATES, UPLOAD_STATES,
  type BuildRecord, type ImageFileInfo, type JobProgress, type LauncherRecord, type NodeRecord, type NodeRequestRecord,
  type NodeResources, type PauseRecord, type SessionRecord, type UploadProgress, type UploadRecord,
} from '../models.js';

/** A JSON object as stored in a znode. */
export type Json = Record<string, unknown>;

/** Epoch ms → Nodepool's float seconds. */
export const toSeconds = (ms: number): number => ms / 1000;
/** Nodepool's float seconds → epoch ms (exact for the ms values we wrote). */
export const toMs = (s: unknown): number => (typeof s === 'number' ? Math.round(s * 1000) : 0);

/** Serialises a znode's JSON. Thrown: StoreError when a value has no JSON form. */
export function encode(value: unknown, what: string): Buffer {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new StoreError(`${what} cannot be stored as JSON`, { cause });
  }
  if (text === undefined) throw new StoreError(`${what} cannot be stored as JSON (got ${typeof value})`);
  return Buffer.from(text);
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

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * When a record was created: `created_time`, else (Nodepool writes none for builds and uploads;
 * Zuul may leave a request's null) `state_time`. Thrown: CorruptRecordError when neither is a
 * number, or either holds something else.
 */
function createdOf(f: Fields, stateTime: number): number {
  return f.optSeconds('created_time') ?? stateTime;
}

/** Checked progress (`{numerator, denominator, …}`), or null. */
function progressOf<T extends JobProgress>(f: Fields): T | null {
  const p = f.optObject('progress');
  if (p === null) return null;
  if (typeof p.numerator !== 'number' || typeof p.denominator !== 'number') f.fail('progress has no numerator and denominator');
  return clone(p) as unknown as T;
}
const clone = <T>(v: T): T => structuredClone(v);

/** A build's JSON. */
export function buildJson(b: BuildRecord): Json {
  const j: Json = { state: b.state, state_time: toSeconds(b.stateTime) };
  if (b.builderHostname !== null) j.builder = b.builderHostname;
  if (b.builderId !== null) j.builder_id = b.builderId;
  if (b.formats.length > 0) j.formats = b.formats.join(',');
  j.created_time = toSeconds(b.created);
  j.files = b.files;
  j.reason = b.reason;
  j.progress = b.progress;
  imageFieldsJson(j, b);
  return j;
}

/** Nodepool 11's JSON names of the image fields. */
const IMAGE_FIELD_JSON: Record<(typeof IMAGE_FIELD_KEYS)[number], string> = { username: 'username', pythonPath: 'python_path', shellType: 'shell_type' };

/** Nodepool 11's `username`, `python_path`, `shell_type`: written when the record has them. */
function imageFieldsJson(j: Json, r: ImageFields): void {
  for (const [k, v] of Object.entries(imageFieldsOfRecord(r))) j[IMAGE_FIELD_JSON[k as keyof ImageFields]] = v;
}

/** The same fields of a build or upload JSON, as it says them (absent when it does not; no legacy defaults). */
function imageFieldsOf(f: Fields, j: Json): ImageFields {
  const out: ImageFields = {};
  for (const k of IMAGE_FIELD_KEYS) if (IMAGE_FIELD_JSON[k] in j) out[k] = f.optStr(IMAGE_FIELD_JSON[k]);
  return out;
}

/** The image fields of a build's JSON that hold a string or null (lenient: others are left out). */
export function imageFieldsFromJson(j: Json): ImageFields {
  const out: ImageFields = {};
  for (const k of IMAGE_FIELD_KEYS) {
    const v = j[IMAGE_FIELD_JSON[k]];
    if (typeof v === 'string' || v === null) out[k] = v;
  }
  return out;
}

/** Thrown: CorruptRecordError when the JSON is not a build's. */
export function buildFromJson(id: string, diskimage: string, j: Json): BuildRecord {
  const f: Fields = new Fields(j, 'build', id);
  const state = f.state('state', BUILD_STATES);
  const stateTime = f.seconds('state_time');
  const formats = f.optStr('formats');
  const files = f.objectList('files');
  for (const file of files) {
    if (typeof file.format !== 'string' || typeof file.size !== 'number' || typeof file.sha256 !== 'string') f.fail('files holds an entry without format, size and sha256');
  }
  return {
    id,
    diskimage,
    state,
    stateTime,
    created: createdOf(f, stateTime),
    builderHostname: f.optStr('builder'),
    builderId: f.optStr('builder_id'),
    formats: formats !== null && formats !== '' ? formats.split(',') : [],
    files: clone(files as unknown as ImageFileInfo[]),
    reason: f.optStr('reason'),
    progress: progressOf<JobProgress>(f),
    ...imageFieldsOf(f, j),
  };
}

/** An upload's JSON. */
export function uploadJson(u: UploadRecord): Json {
  const j: Json = {
    state: u.state,
    state_time: toSeconds(u.stateTime),
    external_id: u.externalId,
    external_name: u.externalName,
    format: u.format,
    image_name: u.imageName,
    created_time: toSeconds(u.created),
    reason: u.reason,
    progress: u.progress,
  };
  imageFieldsJson(j, u);
  return j;
}

/** Thrown: CorruptRecordError when the JSON is not an upload's. */
export function uploadFromJson(where: { id: string; buildId: string; diskimage: string; provider: string }, j: Json): UploadRecord {
  const f: Fields = new Fields(j, 'upload', where.id);
  const state = f.state('state', UPLOAD_STATES);
  const stateTime = f.seconds('state_time');
  return {
    id: where.id,
    buildId: where.buildId,
    diskimage: where.diskimage,
    provider: where.provider,
    imageName: f.optStr('image_name') ?? where.diskimage,
    state,
    stateTime,
    created: createdOf(f, stateTime),
    externalId: f.optStr('external_id'),
    externalName: f.optStr('external_name'),
    format: f.optStr('format'),
    reason: f.optStr('reason'),
    progress: progressOf<UploadProgress>(f),
    ...imageFieldsOf(f, j),
  };
}

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

/** A launcher's JSON (Nodepool's `id`, `provider_name`, `supported_labels`, `priority`, `paused`, then ours). */
export function launcherJson(l: LauncherRecord): Json {
  return {
    id: l.id, provider_name: l.provider, supported_labels: l.supportedLabels, priority: l.priority ?? DEFAULT_POOL_PRIORITY,
    paused: l.paused ?? false, pool: l.pool, registered_time: toSeconds(l.registered),
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

/** A pause's JSON. */
export function pauseJson(p: Omit<PauseRecord, 'diskimage' | 'provider'>): Json {
  return { since: toSeconds(p.since), reason: p.reason };
}

/** The id a pause is listed under: `<diskimage>` or `<diskimage>/<provider>`. */
export const pauseId = (diskimage: string, provider: string | null): string => (provider === null ? diskimage : `${diskimage}/${provider}`);

/** Thrown: CorruptRecordError when the JSON is not a pause's. */
export function pauseFromJson(diskimage: string, provider: string | null, j: Json, ctimeMs: number): PauseRecord {
  const f: Fields = new Fields(j, 'pause', pauseId(diskimage, provider));
  return { diskimage, provider, since: f.optSeconds('since') ?? ctimeMs, reason: f.optStr('reason') };
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

/** Fresh copies of cached records (cheaper than structuredClone, which a 4,000-upload pass feels). */
export const copyBuild = (b: BuildRecord): BuildRecord => ({
  ...b, formats: [...b.formats], files: b.files.map((f) => ({ ...f })), progress: b.progress ? { ...b.progress } : null,
});

export const copyUpload = (u: UploadRecord): UploadRecord => ({ ...u, progress: u.progress ? { ...u.progress } : null });

export const copyNode = (n: NodeRecord): NodeRecord => ({
  ...n, labels: [...n.labels], hostKeys: [...n.hostKeys], resources: n.resources ? { ...n.resources } : null, attributes: { ...n.attributes },
  // A consumer's data may be any JSON: copied only when it is an object or list (rare, small).
  driverData: copyJson(n.driverData), userData: copyJson(n.userData),
});

const copyJson = (v: unknown): unknown => (v !== null && typeof v === 'object' ? structuredClone(v) : v ?? null);

export const copyRequest = (r: NodeRequestRecord): NodeRequestRecord => ({
  ...r, labels: [...r.labels], declinedBy: [...r.declinedBy], nodes: [...r.nodes],
});
