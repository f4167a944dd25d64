/**
 * `tenant-resource-limits:` (Nodepool 11, nodepool/config.py 259-276): per Zuul tenant (the
 * request's `tenant_name`), quota across every provider. `max-servers`, `max-cores` and
 * `max-ram` become `instances`, `cores` and `ram`; `max-volumes` and `max-volume-gb` become
 * `volumes` and `volume-gb`; any other key (an integer) is kept under its own name, as
 * Nodepool does for other drivers' quota codes. An absent key is no limit (the key is left out).
 */
import { describeValue, type Problems, type Schema } from './schema-kit.js';

/** One tenant's limits. */
export interface TenantResourceLimit {
  readonly tenantName: string;
  /** Resource → most the tenant's nodes may hold together; a resource not listed is unlimited. */
  readonly limits: Readonly<Record<string, number>>;
}

/** Nodepool's key → the resource name of quota and node `resources`. */
const RESOURCE_OF: Readonly<Record<string, string>> = {
  'max-servers': 'instances',
  'max-cores': 'cores',
  'max-ram': 'ram',
  'max-volumes': 'volumes',
  'max-volume-gb': 'volume-gb',
};

function entry(v: unknown, path: string, p: Problems): TenantResourceLimit | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    p.add(path, `expected a mapping with tenant-name and limits, got ${describeValue(v, path)}`);
    return undefined;
  }
  let ok = true;
  const src = v as Record<string, unknown>;
  const name = src['tenant-name'];
  if (typeof name !== 'string' || name === '') {
    p.add(`${path}.tenant-name`, `expected a non-empty string, got ${describeValue(name, `${path}.tenant-name`)}${name === undefined ? ' (required)' : ''}`);
    ok = false;
  }
  const limits: Record<string, number> = {};
  for (const [key, raw] of Object.entries(src)) {
    if (key === 'tenant-name') continue;
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0) {
      p.add(`${path}.${key}`, `expected integer >= 0 (a limit), got ${describeValue(raw, `${path}.${key}`)}`);
      ok = false;
      continue;
    }
    limits[RESOURCE_OF[key] ?? key] = raw;
  }
  return ok ? { tenantName: name as string, limits } : undefined;
}

/**
 * The list. Two entries for one tenant: Nodepool keeps the last one; so does this, with a
 * warning naming both paths.
 */
export function tenantResourceLimits(): Schema<TenantResourceLimit[]> {
  return {
    expected: 'a list of tenant limits',
    parse(v, path, p) {
      if (!Array.isArray(v)) {
        p.add(path, `expected ${this.expected}, got ${describeValue(v, path)}`);
        return undefined;
      }
      const parsed = v.map((raw, i) => entry(raw, `${path}[${i}]`, p));
      if (parsed.some((e) => e === undefined)) return undefined;
      const byTenant = new Map<string, number>();
      (parsed as TenantResourceLimit[]).forEach((e, i) => {
        const first = byTenant.get(e.tenantName);
        if (first !== undefined) p.warn(`${path}[${i}]`, `tenant ${JSON.stringify(e.tenantName)} also at ${path}[${first}]: this later entry is used (as in Nodepool)`);
        byTenant.set(e.tenantName, i);
      });
      return [...byTenant.values()].sort((a, b) => a - b).map((i) => parsed[i] as TenantResourceLimit);
    },
  };
}
