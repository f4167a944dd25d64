/**
 * The node records the state store keeps: nodes, node requests and their states. Times are
 * epoch milliseconds; records are plain JSON values.
 */

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
