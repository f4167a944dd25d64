/**
 * The `static` driver's provider config: pools of pre-existing hosts. The schema holds every
 * default (written only here); the parsed config is plain data compared by value, so a reload
 * recreates the provider only when something changed. A host is identified by
 * `name:connection-port`, unique across the provider's pools.
 */
import { normalizeHostKey } from '../../ssh/host-keys.js';
import { bool, int, list, object, oneOf, optional, required, seconds, string, type Problems, type Schema } from '../../config/schema-kit.js';
import { commonPoolFields, commonProviderFields, CONNECTION_TYPES } from '../contract/common-config.js';
import type { DriverConfig, PoolInfo } from '../contract/driver-config.js';

/** A string split on whitespace, or a list of strings: `labels: "a b"` = `labels: [a, b]`. */
function wordsOrList(what: string): Schema<string[]> {
  const item = string();
  return {
    expected: `a ${what} or a list of ${what}s`,
    parse(v, path, p) {
      if (typeof v === 'string') {
        const words = v.trim().split(/\s+/).filter(Boolean);
        if (words.length) return words;
        p.add(path, `expected ${this.expected}, got ""`);
        return undefined;
      }
      if (!Array.isArray(v) || v.length === 0) {
        p.add(path, `expected ${this.expected}, got ${Array.isArray(v) ? 'an empty list' : String(v)}`);
        return undefined;
      }
      const out: string[] = [];
      v.forEach((raw, i) => { const s = item.parse(raw, `${path}[${i}]`, p); if (s !== undefined) out.push(s); });
      return out.length === v.length ? out : undefined;
    },
  };
}

/** One `"<type> <base64>"` key, or a list of them; comments after the key are dropped. */
function hostKeys(): Schema<string[]> {
  const expected = 'an SSH public key "<type> <base64>" or a list of them';
  const one = (raw: unknown, path: string, p: Problems): string | undefined => {
    const key = typeof raw === 'string' ? normalizeHostKey(raw) : undefined;
    if (key === undefined) p.add(path, `expected an SSH public key "<type> <base64>", got ${typeof raw === 'string' ? JSON.stringify(raw.slice(0, 40)) : String(raw)}`);
    return key;
  };
  return {
    expected,
    parse(v, path, p) {
      if (typeof v === 'string') {
        const k = one(v, path, p);
        return k === undefined ? undefined : [k];
      }
      if (!Array.isArray(v)) {
        p.add(path, `expected ${expected}, got ${String(v)}`);
        return undefined;
      }
      const out = v.map((raw, i) => one(raw, `${path}[${i}]`, p));
      return out.every((k): k is string => k !== undefined) ? out : undefined;
    },
  };
}

const staticNode = object({
  /** Hostname or IP address: the node's `hostname` and `interfaceIp`. */
  name: required(string()),
  labels: required(wordsOrList('label')),
  username: optional(string(), 'zuul'),
  /** Seconds a registration scan may take (and the liveness connect before reuse). */
  timeout: optional(seconds({ min: 0.1, fractions: true }), 5),
  'host-key': optional(hostKeys(), []),
  /**
   * Off: the host is not scanned at registration (its `host-key` list becomes the node's host
   * keys) and not checked before reuse (Nodepool assumes it is live).
   */
  'host-key-checking': optional(bool(), true),
  /** The interpreter Ansible uses on the host (`auto`: Ansible discovers it). */
  'python-path': optional(string(), 'auto'),
  /** The host's shell for Ansible (e.g. `sh`, `cmd`, `powershell`); unset: Ansible's default. */
  'shell-type': optional(string()),
  'connection-port': optional(int({ min: 1, max: 65535 }), 22),
  'connection-type': optional(oneOf(CONNECTION_TYPES), 'ssh'),
  'max-parallel-jobs': optional(int({ min: 1 }), 1),
});

/** The identity of a configured host: `name:connection-port`. */
export function hostId(node: { name: string; connectionPort: number }): string {
  return `${node.name}:${node.connectionPort}`;
}

const pool = object({
  ...commonPoolFields,
  nodes: optional(list(staticNode, { uniqueBy: hostId, what: 'node' }), []),
});

const providerObject = object({
  ...commonProviderFields,
  driver: required(oneOf(['static'] as const)),
  pools: optional(list(pool, { uniqueBy: (p) => p.name, what: 'pool' }), []),
});

type Parsed<S> = S extends { parse(...args: never[]): infer T | undefined } ? Exclude<T, undefined> : never;

/** A loaded `driver: static` provider. */
export type StaticProviderConfig = Parsed<typeof providerObject>;
/** One loaded pool of a static provider. */
export type StaticPoolConfig = StaticProviderConfig['pools'][number];
/** One loaded `nodes[]` entry. */
export type StaticNodeConfig = StaticPoolConfig['nodes'][number];

/** Schema of one `driver: static` provider; a host (`name:connection-port`) may appear in one pool only. */
export const staticProviderSchema: Schema<StaticProviderConfig> = {
  expected: providerObject.expected,
  parse(v, path, p) {
    const parsed = providerObject.parse(v, path, p);
    if (parsed === undefined) return undefined;
    const seen = new Map<string, string>();
    let ok = true;
    parsed.pools.forEach((pl, i) => pl.nodes.forEach((n, j) => {
      const id = hostId(n);
      const at = `${path}.pools[${i}].nodes[${j}]`;
      const first = seen.get(id);
      if (first !== undefined) {
        p.add(at, `duplicate node ${JSON.stringify(id)} (also at ${first}); a host may be in one pool only`);
        ok = false;
      } else seen.set(id, at);
    }));
    return ok ? parsed : undefined;
  },
};

/** A configured host with the pool it belongs to. */
export interface StaticHost {
  /** `name:connection-port`. */
  id: string;
  pool: string;
  /** The pool's `node-attributes`, copied to the host's node records. */
  attributes: Readonly<Record<string, string>>;
  node: StaticNodeConfig;
}

/** Every configured host of the provider, in config order. */
export function staticHosts(config: StaticProviderConfig): StaticHost[] {
  return config.pools.flatMap((pl) => pl.nodes.map((node) => ({ id: hostId(node), pool: pl.name, attributes: pl.nodeAttributes, node })));
}

/** A pool's labels: every label of its hosts, in config order. */
export function staticPools(config: StaticProviderConfig): PoolInfo[] {
  return config.pools.map((p) => ({
    name: p.name,
    maxServers: p.maxServers,
    labels: [...new Set(p.nodes.flatMap((n) => n.labels))],
    nodeAttributes: p.nodeAttributes,
  }));
}

/** The static driver's config part (runtime-free; lib/drivers/static/index.ts adds providers). */
export const staticConfig: DriverConfig<StaticProviderConfig> = {
  name: 'static',
  providerSchema: staticProviderSchema,
  pools: staticPools,
};
