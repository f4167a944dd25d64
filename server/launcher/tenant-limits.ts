/**
 * `tenant-resource-limits` (Nodepool 11 PoolWorker._assignHandlers), pure: a request of a
 * tenant with limits is deferred (left requested, not declined) while the resources of every
 * node of that tenant, in any provider and state, plus what this pool would need for the
 * request, exceed one of the tenant's limits. Static nodes carry no resources, so they never
 * count as used.
 */
import type { TenantResourceLimit } from '../../lib/config/schema.js';

/** Resource name → amount (`cores`, `ram`, `instances`, and any other quota key). */
export type ResourceAmounts = Readonly<Record<string, number>>;

/** The sum of resource amounts (node `resources`), key by key; absent ones and non-numbers count as nothing. */
export function sumResources(items: ReadonlyArray<object | null | undefined>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) {
    if (!item) continue;
    for (const [k, v] of Object.entries(item as Record<string, unknown>)) if (typeof v === 'number' && Number.isFinite(v)) out[k] = (out[k] ?? 0) + v;
  }
  return out;
}

/** The limits of the request's tenant, or undefined when it names none or its tenant has none. */
export function limitsOf(tenantName: string | null | undefined, limits: readonly TenantResourceLimit[]): ResourceAmounts | undefined {
  if (!tenantName) return undefined;
  return limits.find((l) => l.tenantName === tenantName)?.limits;
}

/**
 * The first resource whose limit the tenant would pass (`limit - used - needed < 0`), with the
 * figures; null when the request fits.
 */
export function tenantLimitExceeded(
  limits: ResourceAmounts, used: ResourceAmounts, needed: ResourceAmounts,
): { resource: string; limit: number; used: number; needed: number } | null {
  for (const [resource, limit] of Object.entries(limits)) {
    const u = used[resource] ?? 0;
    const n = needed[resource] ?? 0;
    if (limit - u - n < 0) return { resource, limit, used: u, needed: n };
  }
  return null;
}
