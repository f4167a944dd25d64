/**
 * Quota arithmetic (pure): resources as {cores, ram, instances} and, for boot-from-volume
 * nodes, Nodepool's `volumes` and `volume-gb` (the keys its node records carry), with
 * Infinity for "unlimited". The handler adds up what nodes and servers use and asks whether
 * a new demand fits under a limit (Nodepool's QuotaInformation).
 */
import type { NodeRecord, NodeResources } from '../../store/models.js';
import { recordCoverage } from './leaks.js';

/**
 * Resources with Nodepool's volume keys: a boot-from-volume node takes one volume of its
 * label's `volume-size` GB. Absent volume keys count 0 in usage and Infinity in a limit.
 */
export type Resources = NodeResources & { volumes?: number; 'volume-gb'?: number };

/** No resources. */
export const ZERO: Readonly<NodeResources> = Object.freeze({ cores: 0, ram: 0, instances: 0 });

/** No limit. */
export const UNLIMITED: Readonly<NodeResources> = Object.freeze({ cores: Infinity, ram: Infinity, instances: Infinity });

/** Sum of resources (volume keys only when some item has them). */
export function sum(items: Iterable<Readonly<Resources>>): Resources {
  const out: Resources = { ...ZERO };
  for (const r of items) {
    out.cores += r.cores;
    out.ram += r.ram;
    out.instances += r.instances;
    if (r.volumes !== undefined) out.volumes = (out.volumes ?? 0) + r.volumes;
    if (r['volume-gb'] !== undefined) out['volume-gb'] = (out['volume-gb'] ?? 0) + r['volume-gb'];
  }
  return out;
}

/** Whether `used + needed` stays within `limit` in every dimension. */
export function fits(limit: Readonly<Resources>, used: Readonly<Resources>, needed: Readonly<Resources>): boolean {
  const vol = (k: 'volumes' | 'volume-gb'): boolean => (used[k] ?? 0) + (needed[k] ?? 0) <= (limit[k] ?? Infinity);
  return used.cores + needed.cores <= limit.cores
    && used.ram + needed.ram <= limit.ram
    && used.instances + needed.instances <= limit.instances
    && vol('volumes') && vol('volume-gb');
}

/** A pool's limits: `max-servers`, `max-cores`, `max-ram`, `max-volumes`, `max-volume-gb` (absent → unlimited). */
export function poolLimits(pool: {
  maxServers: number; maxCores?: number | undefined; maxRam?: number | undefined; maxVolumes?: number | undefined; maxVolumeGb?: number | undefined;
}): Resources {
  return {
    instances: pool.maxServers >= Number.MAX_SAFE_INTEGER ? Infinity : pool.maxServers,
    cores: pool.maxCores ?? Infinity,
    ram: pool.maxRam ?? Infinity,
    volumes: pool.maxVolumes ?? Infinity,
    'volume-gb': pool.maxVolumeGb ?? Infinity,
  };
}

/** What one node of a label takes: its flavor, plus one volume of `volume-size` GB when it boots from a volume. */
export function labelResources(flavor: Readonly<NodeResources>, label: { bootFromVolume: boolean; volumeSize: number }): Resources {
  return label.bootFromVolume ? { ...flavor, volumes: 1, 'volume-gb': label.volumeSize } : { ...flavor };
}

/** Nova's absolute limits (`GET /limits`); -1 means unlimited. */
/** The cloud's room for nodepool: project maximums and what servers nodepool does not account for use. */
export interface CloudQuota {
  limits: NodeResources;
  unmanaged: NodeResources;
}

export interface ComputeLimits {
  maxTotalInstances: number;
  maxTotalCores: number;
  maxTotalRAMSize: number;
  totalInstancesUsed: number;
  totalCoresUsed: number;
  totalRAMUsed: number;
}

/** The project's maximums as resources (-1 → Infinity). */
export function cloudLimits(l: ComputeLimits): NodeResources {
  const lim = (n: number): number => (n < 0 ? Infinity : n);
  return { instances: lim(l.maxTotalInstances), cores: lim(l.maxTotalCores), ram: lim(l.maxTotalRAMSize) };
}

/** A server as quota accounting sees it. */
export interface ServerUsage {
  id: string;
  metadata: Readonly<Record<string, string>>;
  /** From the server's embedded flavor; null when unknown (counted as one instance). */
  resources: NodeResources | null;
}

/**
 * What servers nodepool does not account for use: servers of other providers or of none,
 * and ours that no node record covers (leaked, see {@link recordCoverage}; the cleanup removes
 * them). A server a record covers is counted through that record, never twice.
 */
export function unmanagedUsage(servers: readonly ServerUsage[], provider: string, nodes: readonly Pick<NodeRecord, 'id' | 'externalId'>[]): NodeResources {
  const covered = recordCoverage(provider, nodes);
  return sum(servers
    .filter((s) => !covered(s))
    .map((s) => s.resources ?? { ...ZERO, instances: 1 }));
}
