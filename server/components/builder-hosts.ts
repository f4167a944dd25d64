/**
 * The builder hosts a server knows of, from gearmand's `workers` (server/image-lifecycle/
 * registrations.ts): every worker whose client id is a builder's (`<hostname>:<builder-id>`)
 * and that offers any image function. Pure.
 */
import { parseBuilderClientId } from '../../lib/gearman/client-id.js';
import { fn } from '../../lib/gearman/functions.js';

/** Hostnames of the builders registered in `registered` (function name → client ids), sorted, once each. */
export function builderHosts(registered: ReadonlyMap<string, readonly string[]>): string[] {
  const hosts = new Set<string>();
  for (const [name, holders] of registered) {
    if (!fn.parse(name)) continue;
    for (const id of holders) {
      const parsed = parseBuilderClientId(id);
      if (parsed) hosts.add(parsed.hostname);
    }
  }
  return [...hosts].sort();
}
