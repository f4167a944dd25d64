/**
 * What a pool needs for a whole request: the sum over its labels of the driver's
 * labelResources (tenant-resource-limits are checked against it).
 */
import type { RequestHandler } from '../../lib/drivers/contract/driver.js';

/** The summed resources of the labels; undefined when the driver cannot tell (the request is then not limited). */
export async function requestResources(driver: RequestHandler, labels: readonly string[]): Promise<Record<string, number> | undefined> {
  if (!driver.labelResources) return undefined;
  const out: Record<string, number> = {};
  for (const label of labels) {
    const r = await driver.labelResources(label);
    if (!r) return undefined;
    for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v;
  }
  return out;
}
