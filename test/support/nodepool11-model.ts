/**
 * Nodepool 11's ZooKeeper model, as a table: which znodes its readers take as which record
 * (the path parsers of its caches), each record kind's allowed states and field types, and
 * what its own code does with a record that breaks them. Written from Nodepool's
 * nodepool/zk/zookeeper.py and components.py at upstream commit a0d1eb50 (the reference:
 * /work/shared/reference/nodepool11-compat.md §3.3, §2); no Nodepool code is run or copied.
 *
 * {@link nodepool11Problems} is what Nodepool 11 would choke on (a TypeError from the `state`
 * setter, an AttributeError from `formats.split`) or misread (a field of another type than its
 * readers and Zuul use). {@link nodepool11Records} reads a tree's znodes as Nodepool's caches
 * classify them.
 */
import { ReadCounter, ZkClient } from '../../lib/store/zookeeper/zk-client.js';

/** Record kinds Nodepool 11 reads from its tree. */
export type Nodepool11Kind = 'build' | 'upload' | 'node' | 'request' | 'component' | 'pool-component';

/** `ImageBuild.VALID_STATES` (zookeeper.py:193). */
export const NP11_BUILD_STATES: readonly string[] = ['building', 'ready', 'deleting', 'failed'];
/** `ImageUpload.VALID_STATES` (zookeeper.py:300). */
export const NP11_UPLOAD_STATES: readonly string[] = ['uploading', 'ready', 'deleting', 'failed'];
/** `NodeRequest.VALID_STATES` (zookeeper.py:400). */
export const NP11_REQUEST_STATES: readonly string[] = ['requested', 'pending', 'fulfilled', 'failed'];
/** `Node.VALID_STATES` (zookeeper.py:516-518). */
export const NP11_NODE_STATES: readonly string[] = ['building', 'testing', 'ready', 'in-use', 'used', 'hold', 'deleting', 'failed', 'init', 'aborted', 'deleted'];
/** `BaseComponent` states (components.py:56-59). */
export const NP11_COMPONENT_STATES: readonly string[] = ['initializing', 'running', 'paused', 'stopped'];

/** A field's type as Nodepool's readers (and Zuul's, for nodes and requests) use it. */
type FieldType =
  | 'str?' // a string or null/absent
  | 'num?' // a number or null/absent (times: float seconds)
  | 'int' | 'int?' // an integer (Python int()) / or null
  | 'bool'
  | 'str[]' // a list of strings
  | 'label' // Node.type: a string or a list of strings (as_list)
  | 'dict?' // an object or null
  | 'csv' // ImageBuild.formats: a comma-joined string (split when non-empty)
  | 'any'; // opaque to Nodepool

/** A field of a kind: its type, and whether Nodepool or Zuul reads it by subscript (absent → KeyError). */
interface Field { type: FieldType; required?: boolean }

const BASE: Record<string, Field> = { state: { type: 'str?', required: true }, state_time: { type: 'num?', required: true } };
const IMAGE: Record<string, Field> = { username: { type: 'str?' }, python_path: { type: 'str?' }, shell_type: { type: 'str?' } };

/** Nodepool 11's fields of each kind (toDict/updateFromDict), with the states its `state` may hold. */
export const NP11_MODEL: Readonly<Record<Nodepool11Kind, { states: readonly string[]; fields: Record<string, Field> }>> = {
  // ImageBuild (zookeeper.py:180-261): formats is split on ',' when truthy.
  build: { states: NP11_BUILD_STATES, fields: { ...BASE, ...IMAGE, builder: { type: 'str?' }, builder_id: { type: 'str?' }, formats: { type: 'csv' } } },
  // ImageUpload (zookeeper.py:296-372).
  upload: { states: NP11_UPLOAD_STATES, fields: { ...BASE, ...IMAGE, external_id: { type: 'str?' }, external_name: { type: 'str?' }, format: { type: 'str?' } } },
  // Node (zookeeper.py:512-722); hold_expiration is int()-coerced (a dict or list raises TypeError).
  node: {
    states: NP11_NODE_STATES,
    fields: {
      ...BASE, cloud: { type: 'str?' }, provider: { type: 'str?' }, pool: { type: 'str?' }, type: { type: 'label' },
      allocated_to: { type: 'str?' }, az: { type: 'str?' }, region: { type: 'str?' }, public_ipv4: { type: 'str?' },
      private_ipv4: { type: 'str?' }, public_ipv6: { type: 'str?' }, host_id: { type: 'str?' }, interface_ip: { type: 'str?' },
      connection_port: { type: 'int' }, ssh_port: { type: 'int' }, image_id: { type: 'str?' }, launcher: { type: 'str?' },
      created_time: { type: 'num?' }, external_id: { type: 'str?' }, hostname: { type: 'str?' }, comment: { type: 'str?' },
      user_data: { type: 'any' }, hold_job: { type: 'str?' }, host_keys: { type: 'str[]' }, username: { type: 'str?' },
      connection_type: { type: 'str?' }, shell_type: { type: 'str?' }, hold_expiration: { type: 'int?' }, resources: { type: 'dict?' },
      slot: { type: 'int?' }, attributes: { type: 'dict?' }, python_path: { type: 'str?' }, tenant_name: { type: 'str?' },
      driver_data: { type: 'any' }, requestor: { type: 'str?' },
    },
  },
  // NodeRequest (zookeeper.py:396-510); Zuul reads state, state_time and event_id by subscript.
  request: {
    states: NP11_REQUEST_STATES,
    fields: {
      ...BASE, declined_by: { type: 'str[]' }, node_types: { type: 'str[]' }, nodes: { type: 'str[]' }, reuse: { type: 'bool' },
      requestor: { type: 'str?' }, requestor_data: { type: 'any' }, provider: { type: 'str?' }, relative_priority: { type: 'int' },
      event_id: { type: 'str?', required: true }, created_time: { type: 'num?' }, tenant_name: { type: 'str?' },
    },
  },
  // BaseComponent (components.py:61-69): a model_api above 0 makes every Nodepool process exit.
  component: {
    states: NP11_COMPONENT_STATES,
    fields: { hostname: { type: 'str?', required: true }, state: { type: 'str?', required: true }, kind: { type: 'str?', required: true }, version: { type: 'any' }, model_api: { type: 'int', required: true } },
  },
  // PoolComponent (components.py:195-208).
  'pool-component': {
    states: NP11_COMPONENT_STATES,
    fields: {
      hostname: { type: 'str?', required: true }, state: { type: 'str?', required: true }, kind: { type: 'str?', required: true }, version: { type: 'any' },
      model_api: { type: 'int', required: true }, id: { type: 'str?' }, name: { type: 'str?' }, provider_name: { type: 'str?' },
      supported_labels: { type: 'str[]' }, priority: { type: 'int' }, paused: { type: 'bool' },
    },
  },
};

/** Why `v` is not of type `t`; undefined when it is (absent counts as null). */
function typeProblem(t: FieldType, v: unknown): string | undefined {
  const isStrList = (x: unknown): boolean => Array.isArray(x) && x.every((e) => typeof e === 'string');
  const ok = v === undefined ? true : {
    'str?': v === null || typeof v === 'string',
    'num?': v === null || (typeof v === 'number' && Number.isFinite(v)),
    int: Number.isInteger(v),
    'int?': v === null || Number.isInteger(v),
    bool: typeof v === 'boolean',
    'str[]': isStrList(v),
    label: typeof v === 'string' || isStrList(v),
    'dict?': v === null || (typeof v === 'object' && !Array.isArray(v)),
    csv: v === null || v === '' || typeof v === 'string',
    any: true,
  }[t];
  return ok ? undefined : `is ${JSON.stringify(v)}, expected ${t}`;
}

/**
 * What Nodepool 11 would fail on or misread in `json` as a record of `kind` (empty: none).
 * `state` must be one of the kind's states (Nodepool raises "'x' is not a valid state"
 * otherwise) and every field Nodepool knows must hold its type.
 */
export function nodepool11Problems(kind: Nodepool11Kind, json: Record<string, unknown>): string[] {
  const model = NP11_MODEL[kind];
  const out: string[] = [];
  for (const [name, field] of Object.entries(model.fields)) {
    if (field.required && !(name in json)) out.push(`${name} is missing`);
    const p = typeProblem(field.type, json[name]);
    if (p) out.push(`${name} ${p}`);
  }
  if (typeof json.state === 'string' && !model.states.includes(json.state)) out.push(`TypeError: '${json.state}' is not a valid state`);
  if ((kind === 'component' || kind === 'pool-component') && json.model_api !== 0) out.push(`model_api is ${JSON.stringify(json.model_api)}: a Nodepool process exits on any but 0`);
  return out;
}

/** One znode as Nodepool 11 reads it. */
export interface Nodepool11Record {
  kind: Nodepool11Kind;
  /** The path under the chroot, e.g. `/nodepool/images/deb/builds/0000000001`. */
  path: string;
  json: Record<string, unknown>;
}

/**
 * The kind Nodepool 11's caches take the znode at `path` for (ImageCache, NodeCache,
 * RequestCache path parsers, zookeeper.py:1241-1377; the component registry, components.py),
 * or undefined. Its image parsers match by depth only: any `/nodepool/images/<a>/<b>/<c>`
 * that is not `lock` reads as an ImageBuild, whatever `<b>` is.
 */
export function nodepool11KindOf(path: string): Nodepool11Kind | undefined {
  const p = path.split('/').slice(1);
  if (p[0] !== 'nodepool' || p.at(-1) === 'lock') return undefined;
  if (p[1] === 'images' && p.length === 9) return 'upload';
  if (p[1] === 'images' && p.length === 5) return 'build';
  if ((p[1] === 'nodes' || p[1] === 'requests') && p.length === 3) return p[1] === 'nodes' ? 'node' : 'request';
  if (p[1] === 'components' && p.length === 4) return p[2] === 'pool' ? 'pool-component' : 'component';
  return undefined;
}

/**
 * Every znode with data under `<chroot>/nodepool` that Nodepool 11 reads as a record, by path
 * (an empty znode is no record to its caches, zookeeper.py:975-1000). `hosts` is
 * `host:port`; its own connection, closed before it returns.
 */
export async function nodepool11Records(hosts: string, chroot: string): Promise<Nodepool11Record[]> {
  const client = await ZkClient.connect({ hosts, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
  const out: Nodepool11Record[] = [];
  try {
    const walk = async (abs: string): Promise<void> => {
      const rel = abs.slice(chroot.length);
      const kind = nodepool11KindOf(rel);
      if (kind) {
        const got = await client.getData(abs);
        if (got && got.data.length > 0) out.push({ kind, path: rel, json: JSON.parse(got.data.toString('utf8')) as Record<string, unknown> });
      }
      for (const c of (await client.getChildren(abs)) ?? []) await walk(`${abs}/${c}`);
    };
    await walk(`${chroot}/nodepool`);
  } finally {
    await client.close();
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
