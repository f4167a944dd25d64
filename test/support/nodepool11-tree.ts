/**
 * Test support: writes into a real ZooKeeper a tree exactly as Nodepool 11 writes it
 * (reference nodepool11-compat.md §3): `json.dumps(toDict())` of ImageBuild, ImageUpload, Node
 * and NodeRequest with their field names, order and shapes (formats comma-joined, float
 * seconds, `type` a list, the upload's `username`/`python_path`/`shell_type`), builds under
 * `uuid4().hex`, uploads and nodes as ZooKeeper sequences (`create(..., sequence=True)` under a
 * parent whose `lock` child came first), kazoo lock directories left behind, request-build and
 * pause markers with no data. A raw client writes it: nothing of this project's store is used.
 */
import { randomUUID } from 'node:crypto';
import zookeeper from 'node-zookeeper-client';

/** A ZooKeeper client as the writer needs it. */
export interface RawZk {
  client: zookeeper.Client;
  close(): void;
}

/** Connects a raw client to `connectString` (`host:port[/chroot]`). */
export async function connectRaw(connectString: string): Promise<RawZk> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 10_000, spinDelay: 50 });
  await new Promise<void>((resolve) => { client.once('connected', () => resolve()); client.connect(); });
  return { client, close: () => client.close() };
}

/** `uuid4().hex`. */
export const uuidHex = (): string => randomUUID().replaceAll('-', '');

/** Python's `time.time()` of an epoch ms value. */
const seconds = (ms: number): number => ms / 1000 + 0.000123;

function mkdirp(c: zookeeper.Client, p: string): Promise<void> {
  return new Promise((resolve, reject) => c.mkdirp(p, (e) => (e ? reject(e) : resolve())));
}

function create(c: zookeeper.Client, p: string, data: Buffer | null, mode: number): Promise<string> {
  return new Promise((resolve, reject) => c.create(p, data ?? Buffer.alloc(0), mode, (e, made) => (e ? reject(e) : resolve(made))));
}

const json = (o: Record<string, unknown>): Buffer => Buffer.from(JSON.stringify(o));

/**
 * kazoo's `create(dir + '/', sequence=True)`: a child named by the parent's cversion alone
 * (this client refuses a path ending in `/`, so the name ZooKeeper would give is taken here).
 */
async function createSequentialChild(c: zookeeper.Client, dir: string, data: Buffer): Promise<string> {
  const stat = await new Promise<zookeeper.Stat>((resolve, reject) => c.exists(dir, (e, st) => (e || !st ? reject(e ?? new Error(`${dir} is missing`)) : resolve(st))));
  const name = String(stat.cversion).padStart(10, '0');
  await create(c, `${dir}/${name}`, data, zookeeper.CreateMode.PERSISTENT);
  return name;
}

/** An ImageBuild as Nodepool 11's builder leaves it. */
export interface Nodepool11Build {
  image: string;
  state: 'building' | 'ready' | 'deleting' | 'failed';
  /** When it reached `state` (epoch ms). */
  at: number;
  builder?: string;
  formats?: string[];
  username?: string;
  pythonPath?: string;
  shellType?: string | null;
}

/** An ImageUpload. */
export interface Nodepool11Upload {
  image: string;
  buildId: string;
  provider: string;
  state: 'uploading' | 'ready' | 'deleting' | 'failed';
  at: number;
  externalId: string | null;
  externalName: string;
  format?: string;
}

/** A Node as Nodepool 11's launcher writes it (the fields a test chooses; the rest as toDict writes them). */
export interface Nodepool11Node {
  state: string;
  at: number;
  provider: string;
  pool: string;
  label: string;
  externalId: string;
  imageId: string | null;
  allocatedTo?: string | null;
  interfaceIp?: string;
}

/** Writes a Nodepool 11 tree under `/nodepool` of `zk`'s chroot. */
export class Nodepool11Tree {
  constructor(private readonly zk: zookeeper.Client) {}

  /** `/nodepool/images/<image>` and its `builds/lock`, as the first build of the image leaves them. */
  async image(image: string): Promise<void> {
    await mkdirp(this.zk, `/nodepool/images/${image}/builds/lock`);
  }

  /** An ImageBuild at `builds/<uuid4 hex>` (with its build-id lock dir); returns the hex. */
  async build(b: Nodepool11Build): Promise<string> {
    await this.image(b.image);
    const id = uuidHex();
    const d: Record<string, unknown> = { state: b.state, state_time: seconds(b.at) };
    d.builder = b.builder ?? 'nb01.example.org';
    d.builder_id = randomUUID();
    const formats = b.formats ?? ['qcow2'];
    if (formats.length > 0) d.formats = formats.join(',');
    d.username = b.username ?? 'zuul';
    d.python_path = b.pythonPath ?? 'auto';
    d.shell_type = b.shellType ?? null;
    const path = `/nodepool/images/${b.image}/builds/${id}`;
    await create(this.zk, path, json(d), zookeeper.CreateMode.PERSISTENT);
    await create(this.zk, `${path}/lock`, null, zookeeper.CreateMode.PERSISTENT);
    return id;
  }

  /**
   * An ImageUpload: `providers/<p>/images/lock` first (it bumps the parent's sequence, as
   * Nodepool's upload lock does), then a sequential child. Returns the 10-digit upload id.
   */
  async upload(u: Nodepool11Upload): Promise<string> {
    const dir = `/nodepool/images/${u.image}/builds/${u.buildId}/providers/${u.provider}/images`;
    try {
      await mkdirp(this.zk, `${dir}/lock`);
    } catch {
      // there already
    }
    const d = {
      state: u.state, state_time: seconds(u.at), external_id: u.externalId, external_name: u.externalName,
      format: u.format ?? 'qcow2', username: 'zuul', python_path: 'auto', shell_type: null,
    };
    return createSequentialChild(this.zk, dir, json(d));
  }

  /** A Node (persistent sequential under `/nodepool/nodes/`); returns its id. */
  async node(n: Nodepool11Node): Promise<string> {
    await mkdirp(this.zk, '/nodepool/nodes');
    const t = seconds(n.at);
    const d = {
      state: n.state, state_time: t, cloud: 'loopback', provider: n.provider, pool: n.pool, type: [n.label],
      allocated_to: n.allocatedTo ?? null, az: 'nova', region: 'RegionOne', public_ipv4: null, private_ipv4: n.interfaceIp ?? '10.1.0.9',
      public_ipv6: null, host_id: 'hostid', interface_ip: n.interfaceIp ?? '10.1.0.9', connection_port: 22, ssh_port: 22,
      image_id: n.imageId, launcher: 'nl01.example.org-PoolWorker.cloud-main-0f1e2d3c', created_time: t, external_id: n.externalId,
      hostname: `np${n.externalId.slice(0, 8)}`, comment: null, user_data: null, hold_job: null, host_keys: [], username: 'zuul',
      connection_type: 'ssh', shell_type: null, hold_expiration: null, resources: { cores: 1, instances: 1, ram: 512 }, slot: null,
      attributes: null, python_path: 'auto', tenant_name: null, driver_data: null, requestor: null,
    };
    return createSequentialChild(this.zk, '/nodepool/nodes', json(d));
  }

  /** A NodeRequest as Zuul writes it (persistent sequential `100-<seq>`); returns its id. */
  async request(labels: string[], at: number): Promise<string> {
    await mkdirp(this.zk, '/nodepool/requests');
    const d = {
      state: 'requested', state_time: seconds(at), declined_by: [], node_types: labels, nodes: [], reuse: true,
      requestor: 'zuul-scheduler01', requestor_data: { build_set_uuid: uuidHex(), tenant_name: 'tenant-one', pipeline_name: 'check', job_name: 'job' },
      provider: null, relative_priority: 0, event_id: uuidHex(), created_time: seconds(at), tenant_name: 'tenant-one',
    };
    const made = await create(this.zk, '/nodepool/requests/100-', json(d), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL);
    return made.slice(made.lastIndexOf('/') + 1);
  }

  /** `nodepool image-pause`: an empty `pause` znode (no makepath: the image znode must exist). */
  async pause(image: string): Promise<void> {
    await create(this.zk, `/nodepool/images/${image}/pause`, null, zookeeper.CreateMode.PERSISTENT);
  }

  /** `nodepool image-build`: an empty `request-build` znode. */
  async requestBuild(image: string): Promise<void> {
    await mkdirp(this.zk, `/nodepool/images/${image}/request-build`);
  }
}
