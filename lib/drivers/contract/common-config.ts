/**
 * Config keys every driver shares (Nodepool's common provider and pool schema). Drivers
 * spread these into their own schemas, so defaults are written once.
 */
import { ignored, int, optional, record, required, scalarString, string } from '../../config/schema-kit.js';

/** How consumers connect to a node (`connection-type` of every driver). */
export const CONNECTION_TYPES = ['ssh', 'winrm', 'network_cli'] as const;

/** The priority of a pool when neither it nor its provider sets one (Nodepool's 100). */
export const DEFAULT_PRIORITY = 100;

/**
 * Provider keys: `name`, `max-concurrency` (-1 unlimited, 0 handles no requests) and
 * `priority` (its pools' default; lower is preferred; unset: {@link DEFAULT_PRIORITY}).
 */
export const commonProviderFields = {
  name: required(string()),
  'max-concurrency': optional(int({ min: -1 }), -1),
  priority: optional(int()),
  /** Deprecated openstack-provider key that Nodepool 11 accepts and never reads: a warning names it. */
  'nodepool-id': ignored('deprecated; Nodepool 11 accepts it and never reads it'),
};

/**
 * Pool keys: `name`, `max-servers` (unlimited; 0 disables the pool), `node-attributes`, and
 * `priority` (overrides the provider's; see {@link poolPriority}).
 */
export const commonPoolFields = {
  name: required(string()),
  'max-servers': optional(int({ min: 0 }), Number.MAX_SAFE_INTEGER),
  'node-attributes': optional(record(scalarString()), {}),
  priority: optional(int()),
};

/**
 * A pool's effective priority, as Nodepool computes it: the pool's `priority`, else the
 * provider's, else {@link DEFAULT_PRIORITY}. Lower is preferred: a pool yields a request to
 * a better one that can serve it and is not paused.
 */
export function poolPriority(
  provider: { readonly priority?: number | undefined; readonly pools?: ReadonlyArray<{ readonly name: string; readonly priority?: number | undefined }> },
  pool: string,
): number {
  return provider.pools?.find((p) => p.name === pool)?.priority ?? provider.priority ?? DEFAULT_PRIORITY;
}

/** A provider's pool by name. Thrown: Error for an unknown pool (a launcher bug). */
export function poolNamed<P extends { name: string }>(provider: { name: string; pools: readonly P[] }, name: string): P {
  const pool = provider.pools.find((p) => p.name === name);
  if (!pool) throw new Error(`provider ${provider.name} has no pool ${JSON.stringify(name)}`);
  return pool;
}

/** The label's config in the first pool that serves it. */
export function firstLabelConfig<L extends { name: string }>(pools: ReadonlyArray<{ labels: readonly L[] }>, label: string): L | undefined {
  for (const pool of pools) {
    const l = pool.labels.find((x) => x.name === label);
    if (l) return l;
  }
  return undefined;
}
