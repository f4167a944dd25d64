/**
 * Where images live, as gearmand sees it: `workers` of every gearmand merged into
 * function name → client ids. This is the source of truth the planner reconciles against.
 */
import { adminWorkers } from '../../lib/gearman/admin.js';
import { fn } from '../../lib/gearman/functions.js';
import type { GearmanServerAddress } from '../../lib/gearman/types.js';
import { parseImageId } from '../../lib/images/image-file.js';
import type { Logger } from '../../lib/log.js';
import type { BuildRecord } from '../../lib/store/models.js';

/**
 * Asks every gearmand for its workers. `null` when any of them did not answer: a partial
 * picture would make images on the silent server look lost.
 */
export async function fetchRegistrations(servers: readonly GearmanServerAddress[], log: Logger, timeoutMs = 5000): Promise<Map<string, string[]> | null> {
  if (servers.length === 0) return null;
  const replies = await Promise.allSettled(servers.map((s) => adminWorkers(s, { timeoutMs })));
  const merged = new Map<string, string[]>();
  for (const [i, reply] of replies.entries()) {
    if (reply.status === 'rejected') {
      log.warn('gearmand admin did not answer; skipping reconciliation this pass', { server: `${servers[i]?.host}:${servers[i]?.port}`, error: (reply.reason as Error).message });
      return null;
    }
    for (const worker of reply.value) {
      for (const f of worker.functions) {
        const holders = merged.get(f) ?? [];
        if (!holders.includes(worker.clientId)) holders.push(worker.clientId);
        merged.set(f, holders);
      }
    }
  }
  return merged;
}

/** Image ids of `diskimage` that builders advertise (upload or delete functions): a new build must not take one. */
export function advertisedIds(registered: ReadonlyMap<string, readonly string[]> | null, diskimage: string): string[] {
  const ids = new Set<string>();
  for (const name of registered?.keys() ?? []) {
    const f = fn.parse(name);
    if (f && f.kind !== 'build' && diskimageOf(f.imageId) === diskimage) ids.add(f.imageId);
  }
  return [...ids];
}

function diskimageOf(imageId: string): string | undefined {
  try {
    return parseImageId(imageId).diskimage;
  } catch {
    return undefined;
  }
}

/** Image ids builders advertise (`image-upload:<id>`) that no build record has: candidates for stray deletion. */
export function unknownAdvertised(registered: ReadonlyMap<string, readonly string[]>, builds: readonly Pick<BuildRecord, 'id'>[]): string[] {
  const known = new Set(builds.map((b) => b.id));
  const ids: string[] = [];
  for (const [name, holders] of registered) {
    const f = fn.parse(name);
    if (f?.kind === 'upload' && holders.length > 0 && diskimageOf(f.imageId) !== undefined && !known.has(f.imageId)) ids.push(f.imageId);
  }
  return ids;
}
