/**
 * The records the state store keeps. Times are epoch milliseconds. Records are plain JSON
 * values (no classes), so every backend can store them as they are.
 */

/**
 * States of a build (Nodepool's image build states plus `lost`: ready, but no builder holds its
 * files any more; its uploads still serve).
 */
export const BUILD_STATES = ['building', 'ready', 'failed', 'deleting', 'lost'] as const;
export type BuildState = (typeof BUILD_STATES)[number];

/** Nodepool 11's build states (`ImageBuild.VALID_STATES`): all its `state` field may hold. */
export const NODEPOOL_BUILD_STATES = ['building', 'ready', 'deleting', 'failed'] as const;
export type NodepoolBuildState = (typeof NODEPOOL_BUILD_STATES)[number];

/**
 * What Nodepool 11 is told of each build state (issue 31): a lost build is `ready` to it, since
 * its uploads serve launches (Nodepool's builder only uploads builds whose files it holds).
 */
export const NODEPOOL_BUILD_STATE: Readonly<Record<BuildState, NodepoolBuildState>> = {
  building: 'building', ready: 'ready', failed: 'failed', deleting: 'deleting', lost: 'ready',
};

/**
 * States of an upload of a build to one provider: `uploading → validating → ready | failed →
 * deleting`; `validating` only when the provider diskimage has `validate:`.
 */
export const UPLOAD_STATES = ['uploading', 'validating', 'ready', 'failed', 'deleting'] as const;
export type UploadState = (typeof UPLOAD_STATES)[number];

/** Nodepool 11's upload states (`ImageUpload.VALID_STATES`): all its `state` field may hold. */
export const NODEPOOL_UPLOAD_STATES = ['uploading', 'ready', 'deleting', 'failed'] as const;
export type NodepoolUploadState = (typeof NODEPOOL_UPLOAD_STATES)[number];

/**
 * What Nodepool 11 is told of each upload state (issue 31): an upload being validated is still
 * `uploading` to it, so no Nodepool launcher boots it before the validation passed.
 */
export const NODEPOOL_UPLOAD_STATE: Readonly<Record<UploadState, NodepoolUploadState>> = {
  uploading: 'uploading', validating: 'uploading', ready: 'ready', failed: 'failed', deleting: 'deleting',
};

/** One image file a builder holds, as the build's WORK_COMPLETE reported it. */
export interface ImageFileInfo {
  format: string;
  size: number;
  sha256: string;
}

/** Progress of a running job, from its WORK_STATUS. */
export interface JobProgress {
  numerator: number;
  denominator: number;
}

/**
 * Progress of a running upload: `numerator` and `denominator` are the bytes sent and the
 * file's size (the builder's WORK_STATUS). The server adds the rate and the time of the
 * sample; records written before it did have only the fraction, so both are optional.
 */
export interface UploadProgress extends JobProgress {
  /** Bytes per second over the last few seconds of samples; null until two samples are known. */
  rate?: number | null;
  /** When the server received this sample (epoch ms, the server's clock). */
  sampledAt?: number;
}

/** A diskimage build: `<diskimage>-<10-digit sequence>`, never reused. */
export interface BuildRecord {
  id: string;
  diskimage: string;
  state: BuildState;
  /** When `state` last changed. */
  stateTime: number;
  created: number;
  /** Hostname of the builder that holds (or builds) the files; null until known. */
  builderHostname: string | null;
  /** The builder's persistent id (builder_id.txt); null until known. */
  builderId: string | null;
  /** Formats asked for while building; the formats built once ready. */
  formats: string[];
  /** Files the builder reported (empty until ready). */
  files: ImageFileInfo[];
  /** Why the build failed, was lost or is being deleted. */
  reason: string | null;
  /** Last WORK_STATUS of the running build job. */
  progress: JobProgress | null;
  /**
   * Nodepool 11's `username`, `python_path` and `shell_type` of the image (its diskimage's
   * `username`, `python-path`, `shell-type`), as the record says; absent when it says nothing
   * (Nodepool would read `zuul` and the legacy `/usr/bin/python2`: not applied here).
   */
  username?: string | null;
  pythonPath?: string | null;
  shellType?: string | null;
  /**
   * Where the builder holding the build serves its log over HTTP (issue 25 §2,
   * `http://<builder>:<port>/build-logs/<id>`); null or absent when the builder serves none.
   * ZooKeeper: `log_url`, beside Nodepool's fields.
   */
  logUrl?: string | null;
}

/** An upload of a build to one provider. `id` is a 10-digit sequence, unique in the store. */
export interface UploadRecord {
  id: string;
  buildId: string;
  diskimage: string;
  provider: string;
  /** The provider's name for the image (the provider diskimage name). */
  imageName: string;
  state: UploadState;
  stateTime: number;
  created: number;
  /** The cloud's image id, once known. */
  externalId: string | null;
  /** The cloud's image name, chosen before the upload starts. */
  externalName: string | null;
  /** The format that was uploaded. */
  format: string | null;
  reason: string | null;
  progress: UploadProgress | null;
  /** Nodepool 11's image fields, copied from the build when the upload is created (see BuildRecord). */
  username?: string | null;
  pythonPath?: string | null;
  shellType?: string | null;
  /**
   * Rollout (issue 24 §3): launches booted from this upload that came up ready, and that failed
   * (boot, host-key scan, validation of the launch), as every launcher counted them through
   * {@link UploadStore.recordLaunch}; absent reads as 0. ZooKeeper: `launches`, `launch_failures`.
   */
  launches?: number;
  launchFailures?: number;
  /**
   * The rollout decision written for this upload, or absent/null while none was (then
   * lib/images/rollout.ts derives it from the config: canary or promoted). ZooKeeper:
   * `rollout_state`, `rollout_time` (seconds), `rollout_reason`.
   */
  rollout?: UploadRollout | null;
}

/** Where an upload stands in its rollout (issue 24 §3). */
export const ROLLOUT_STATES = ['canary', 'promoted', 'revoked'] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

/** A rollout decision on one upload: when it was taken (epoch ms) and why. */
export interface UploadRollout {
  state: RolloutState;
  time: number;
  reason: string | null;
}

/**
 * A pin (`nodepool image-pin`, issue 24 §1): launches of `diskimage` on `provider` (every
 * provider when null) boot build `buildId`'s upload, whatever is newer; retention keeps it.
 */
export interface PinRecord {
  diskimage: string;
  provider: string | null;
  buildId: string;
  since: number;
  reason: string | null;
}

/**
 * A revoked build (`nodepool image-revoke`, issue 24 §2): no launch boots any upload of it, it
 * is not one of the builds retention keeps, and the lifecycle builds anew as for a missing image.
 */
export interface RevocationRecord {
  diskimage: string;
  buildId: string;
  since: number;
  reason: string | null;
}

/** How a write through the web API ended (issue 25 §1). */
export const AUDIT_RESULTS = ['ok', 'refused', 'denied', 'error', 'attempted'] as const;
/**
 * `ok`: done; `refused`: the action refused (unknown, wrong state, …); `denied`: too weak a role
 * or none; `error`: it failed; `attempted` (status 0): the action was begun, written before it
 * runs and replaced by its outcome once it ended (Store.completeAudit); an entry left
 * `attempted` is one whose outcome could not be written.
 */
export type AuditResult = (typeof AUDIT_RESULTS)[number];

/**
 * One entry of the audit trail: every write the web API was asked for, who asked (as the
 * verified token says; `null` when no token verified), what, when, and how it ended. `id` is a
 * 10-digit sequence; entries are never changed, and the oldest go past the store's bound.
 */
export interface AuditRecord {
  id: string;
  time: number;
  user: string | null;
  role: string | null;
  authenticator: string | null;
  /** The action (`image-build`, `node-hold`, …). */
  action: string;
  /** What it names (`ubuntu-jammy`, `0000000012`, `ubuntu-jammy@cloud-a`). */
  target: string;
  method: string;
  path: string;
  /** The HTTP status answered. */
  status: number;
  result: AuditResult;
  /** The answer's sentence (never a token or secret). */
  message: string;
  /** The client's address. */
  remote: string | null;
}

/** What {@link AuditRecord} is made from (the store gives `id`). */
export type NewAuditRecord = Omit<AuditRecord, 'id'>;

/**
 * An operator's request to retry a diskimage's failed uploads to one provider now, without
 * waiting out the retry backoff (`POST /api/upload/<id>/retry`, issue 25 §1).
 */
export interface UploadRetryRequest {
  diskimage: string;
  provider: string;
  requested: number;
}

/** An operator's request for a build of a diskimage (`nodepool image-build`). */
export interface BuildRequest {
  diskimage: string;
  requested: number;
}

/**
 * An operator's pause (`nodepool image-pause`): of a diskimage's builds when `provider` is
 * null, or of its uploads to one provider.
 */
export interface PauseRecord {
  diskimage: string;
  provider: string | null;
  since: number;
  reason: string | null;
}

/** What a new build starts with. */
export interface NewBuild {
  diskimage: string;
  formats: string[];
  /**
   * The build serves the build requests of its diskimage made at or before this time (epoch
   * ms): they are removed in the same transaction that creates it, so a stop or an operator's
   * delete of the build cannot leave a request that starts another build.
   */
  servesRequestsUpTo?: number;
  /**
   * Ids the new build must not take (those builders still advertise files for, e.g. after the
   * state was reset or restored): the sequence moves past them.
   */
  skipIds?: readonly string[];
  /** Nodepool 11's image fields to record (the diskimage's `username`, `python-path`, `shell-type`). */
  username?: string | null;
  pythonPath?: string | null;
  shellType?: string | null;
  /**
   * The build's log token (issue 31 §9; lib/http/build-log-protocol.ts): stored with the record
   * (SQLite `log_token`, ZooKeeper `log_token` beside Nodepool's fields) and read back only
   * through {@link BuildStore.buildLogToken}, never in a BuildRecord, so no list, page or export
   * can show it.
   */
  logToken?: string;
}

/** What a new upload starts with. */
export interface NewUpload {
  buildId: string;
  provider: string;
  imageName: string;
  externalName: string | null;
  /** Nodepool 11's image fields; by default the build's. */
  username?: string | null;
  pythonPath?: string | null;
  shellType?: string | null;
}

/** Fields of a build that may change. Setting `state` also sets `stateTime` to the store's clock. */
export type BuildPatch = Partial<Pick<BuildRecord,
  'state' | 'builderHostname' | 'builderId' | 'formats' | 'files' | 'reason' | 'progress' | 'logUrl'>>;

/** Fields of an upload that may change. Setting `state` also sets `stateTime` to the store's clock. */
export type UploadPatch = Partial<Pick<UploadRecord,
  'state' | 'externalId' | 'externalName' | 'format' | 'reason' | 'progress' | 'rollout' | 'launches' | 'launchFailures'>>;

/** A launch's result as counted on its upload ({@link UploadStore.recordLaunch}). */
export type LaunchResult = 'success' | 'failure';

/**
 * States of a node: Nodepool's node states (Nodepool 11 also has `testing` and `deleted`, which
 * this program never writes), so a node's `state` is always one Nodepool 11 reads.
 */
export const NODE_STATES = ['init', 'building', 'ready', 'in-use', 'used', 'hold', 'deleting', 'failed', 'aborted'] as const;
export type NodeState = (typeof NODE_STATES)[number];

/** Resources a node takes from its provider's quota. */
export interface NodeResources {
  cores: number;
  ram: number;
  instances: number;
}

/**
 * A node: a cloud server or a static host slot. `id` is a 10-digit sequence, unique in the
 * store and never reused. Field names follow what a consumer (Zuul) needs.
 */
export interface NodeRecord {
  id: string;
  state: NodeState;
  stateTime: number;
  created: number;
  provider: string;
  pool: string;
  /** The labels the node serves (one for cloud nodes; a static host may serve several). */
  labels: string[];
  /** Id of the launcher (pool worker) that created or registered the node. */
  launcher: string | null;
  /** The request the node is allocated to, if any. */
  allocatedTo: string | null;
  hostname: string | null;
  /** The address consumers connect to. */
  interfaceIp: string | null;
  publicIpv4: string | null;
  publicIpv6: string | null;
  privateIpv4: string | null;
  /** `ssh`, `winrm`, `network_cli`, … */
  connectionType: string;
  connectionPort: number;
  username: string | null;
  /** `<keytype> <base64>` lines as scanned. */
  hostKeys: string[];
  /** The provider's id of the resource (server id); null for static nodes. */
  externalId: string | null;
  /** clouds.yaml cloud, region and availability zone, where the driver has them. */
  cloud: string | null;
  region: string | null;
  az: string | null;
  /** Upload id or cloud-image name the node was booted from. */
  image: string | null;
  resources: NodeResources | null;
  /** The pool's `node-attributes`. */
  attributes: Record<string, string>;
  /** Why the node failed, was aborted, or is being deleted. */
  reason: string | null;
  /** Set while the node is held (`nodepool hold`). */
  holdReason: string | null;
  /** Epoch ms after which a held node is deleted (null: only `max-hold-age` applies). */
  holdExpiration: number | null;
  /**
   * The consumer session an in-use node belongs to: when that session dies the node is
   * abandoned and deleted. Null for consumers that hand nodes back explicitly
   * (`nodepool release`).
   */
  consumerSession: string | null;
  /**
   * An in-use node handed to its consumer with neither a lock nor a session (`nodepool request`
   * hands nodes to an operator): kept until released. Any other in-use node that nobody locks
   * was abandoned (a Zuul-style consumer holds the node's lock while it uses it) and is deleted.
   */
  handedOff: boolean;
  /**
   * The upload this node validates (issue 14 §2): a node the validation gate boots from exactly
   * that upload. Such a node is never handed to a request nor counted as ready stock (its
   * `allocatedTo` is {@link validationAllocation} of the upload), and any such node nobody
   * locks is deleted. Null (or absent in records written before the field existed) otherwise.
   */
  validatesUpload?: string | null;
  /**
   * Fields Nodepool 11 writes and Zuul reads (issue 21 §2), optional so records written before
   * them still read: the interpreter Ansible uses (`python_path`, default `auto`), its shell
   * (`shell_type`), the tenant and requestor of the request the node was allocated to, a
   * driver's opaque data, what the consumer wrote (`user_data`), the job that holds it
   * (`hold_job`), a static host's slot (`slot`, 0…max-parallel-jobs−1) and the cloud's host id.
   */
  pythonPath?: string | null;
  shellType?: string | null;
  tenantName?: string | null;
  requestor?: string | null;
  driverData?: unknown;
  userData?: unknown;
  holdJob?: string | null;
  slot?: number | null;
  hostId?: string | null;
}

/**
 * The `allocatedTo` of a validation node: not a request id, so no request handler, min-ready
 * count or max-ready-age treats the node as free stock.
 */
export function validationAllocation(uploadId: string): string {
  return `validation-${uploadId}`;
}

/** What a new node starts with for each field {@link NewNode} may leave out (every backend). */
export const NODE_DEFAULTS: Readonly<Required<Omit<NodeRecord, 'id' | 'stateTime' | 'created' | 'state' | 'provider' | 'pool' | 'labels'>>> = {
  launcher: null, allocatedTo: null, hostname: null, interfaceIp: null, publicIpv4: null, publicIpv6: null,
  privateIpv4: null, connectionType: 'ssh', connectionPort: 22, username: null, hostKeys: [], externalId: null,
  cloud: null, region: null, az: null, image: null, resources: null, attributes: {}, reason: null,
  holdReason: null, holdExpiration: null, consumerSession: null, handedOff: false, validatesUpload: null,
  // Nodepool's default interpreter is `auto` (Ansible's discovery); an explicit null would reach Zuul as None.
  pythonPath: 'auto', shellType: null, tenantName: null, requestor: null, driverData: null, userData: null,
  holdJob: null, slot: null, hostId: null,
};

/** What a new node starts with; everything else starts empty. */
export type NewNode = Pick<NodeRecord, 'state' | 'provider' | 'pool' | 'labels'> & Partial<Omit<NodeRecord, 'id' | 'stateTime' | 'created'>>;

/** Fields of a node that may change. Setting `state` also sets `stateTime`. */
export type NodePatch = Partial<Omit<NodeRecord, 'id' | 'created' | 'stateTime'>>;

/** States of a node request: Nodepool 11's own, all of them. */
export const REQUEST_STATES = ['requested', 'pending', 'fulfilled', 'failed'] as const;
export type RequestState = (typeof REQUEST_STATES)[number];

/**
 * A request for a set of nodes. `id` is `<priority, 3 digits>-<10-digit sequence>`, so ids
 * sort by priority, then age. Lower priority values are served first (default 100).
 */
export interface NodeRequestRecord {
  id: string;
  priority: number;
  state: RequestState;
  stateTime: number;
  created: number;
  /** Labels asked for, in order; repeats allowed. */
  labels: string[];
  requestor: string;
  /** May ready nodes be reused (false for min-ready requests). */
  reuse: boolean;
  /** A preferred provider: other providers yield to it while it has live launchers that have not declined. */
  provider: string | null;
  /** Launcher ids that declined the request. */
  declinedBy: string[];
  /** Node ids in the order of `labels`, once fulfilled. */
  nodes: string[];
  /** Why the request failed. */
  reason: string | null;
  /** When set, the request is removed once this session dies (an ephemeral request). */
  requestorSession: string | null;
  /** Zuul's `tenant_name`: the tenant whose `tenant-resource-limits` apply (issue 21). */
  tenantName?: string | null;
  /** Zuul's `relative_priority` (lower first within one priority). */
  relativePriority?: number;
  /** Zuul's `event_id`. */
  eventId?: string | null;
}

/** What a new request starts with. */
export interface NewNodeRequest {
  labels: string[];
  requestor: string;
  priority?: number;
  reuse?: boolean;
  provider?: string | null;
  requestorSession?: string | null;
  tenantName?: string | null;
}

/** Fields of a request that may change. Setting `state` also sets `stateTime`. */
export type NodeRequestPatch = Partial<Pick<NodeRequestRecord, 'state' | 'declinedBy' | 'nodes' | 'reason'>>;

/**
 * A store session: a process's liveness lease. Locks and launcher registrations belong to a
 * session and lapse with it (ZooKeeper's ephemeral nodes, in any backend).
 */
export interface SessionRecord {
  id: string;
  /** What holds it, e.g. `nodepool-server`, `nodepool request`. */
  owner: string;
  hostname: string;
  pid: number;
  created: number;
  /** Last renewal; the session is live while `now - renewed <= ttlMs`. */
  renewed: number;
  ttlMs: number;
}

/** A lock on `node:<id>` or `request:<id>`, held by a session. */
export interface LockRecord {
  resource: string;
  sessionId: string;
  acquired: number;
  /** False when the holding session has lapsed (a stale lock: free to take). */
  live: boolean;
}

/** A pool worker announcing which labels it can serve. */
export interface LauncherRecord {
  /** `<hostname>-<pid>-PoolWorker.<provider>-<pool>`. */
  id: string;
  sessionId: string;
  provider: string;
  pool: string;
  /** Labels this pool can serve. */
  supportedLabels: string[];
  registered: number;
  /** Nodepool 11's pool `priority` (lower is preferred; default 100). */
  priority?: number;
  /** True while the pool waits for quota (Nodepool 11's pool component `paused`). */
  paused?: boolean;
}

/**
 * What {@link SessionStore.updateLauncher} may change in a registered launcher (Nodepool 11
 * refreshes its pool component's labels and priority every pass and `paused` as it changes).
 */
export type LauncherPatch = Partial<Pick<LauncherRecord, 'supportedLabels' | 'priority' | 'paused'>>;
