/**
 * Config keys every driver shares (Nodepool's common provider and pool schema). Drivers
 * spread these into their own schemas, so defaults are written once.
 */
import { int, optional, record, required, scalarString, string } from '../config/schema-kit.js';

/** How consumers connect to a node (`connection-type` of every driver). */
export const CONNECTION_TYPES = ['ssh', 'winrm', 'network_cli'] as const;

/** Provider keys: `name` and `max-concurrency` (-1 unlimited, 0 handles no requests). */
export const commonProviderFields = {
  name: required(string()),
  'max-concurrency': optional(int({ min: -1 }), -1),
};

/** Pool keys: `name`, `max-servers` (unlimited; 0 disables the pool), `node-attributes`. */
export const commonPoolFields = {
  name: required(string()),
  'max-servers': optional(int({ min: 0 }), Number.MAX_SAFE_INTEGER),
  'node-attributes': optional(record(scalarString()), {}),
};

/** Canonical JSON (sorted keys), so equal configs give equal strings. */
export function fingerprint(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** Value equality of two configs: a provider restarts on reload only when this is false. */
export function configEquals(a: unknown, b: unknown): boolean {
  return fingerprint(a) === fingerprint(b);
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
