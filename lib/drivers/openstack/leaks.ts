/**
 * Leak detection (pure): which of a provider's servers no node record accounts for. A
 * server is ours when its metadata names this provider; it is leaked when its
 * `nodepool_node_id` has no record and no record carries its id as `externalId`.
 */
import type { NodeRecord } from '../../store/models.js';

/** A server as leak detection sees it. */
export interface ServerTags {
  id: string;
  name: string;
  metadata: Readonly<Record<string, string>>;
}

/** A leaked server and what its metadata says about the node it was for. */
export interface LeakedServer {
  externalId: string;
  name: string;
  nodeId: string | null;
  pool: string;
  labels: string[];
}

/**
 * Whether a node record covers a server: the server is this provider's and its
 * `nodepool_node_id` has a record, or a record carries its id as `externalId` (a leak the
 * cleanup already took over as a `deleting` record). Leak detection and quota use the same rule.
 */
export function recordCoverage(provider: string, nodes: readonly Pick<NodeRecord, 'id' | 'externalId'>[]): (s: Pick<ServerTags, 'id' | 'metadata'>) => boolean {
  const ids = new Set(nodes.map((n) => n.id));
  const externalIds = new Set(nodes.flatMap((n) => (n.externalId ? [n.externalId] : [])));
  return (s) => s.metadata.nodepool_provider_name === provider && (ids.has(s.metadata.nodepool_node_id ?? '') || externalIds.has(s.id));
}

/** The provider's servers that no record covers. */
export function findLeakedServers(servers: readonly ServerTags[], provider: string, nodes: readonly Pick<NodeRecord, 'id' | 'externalId'>[]): LeakedServer[] {
  const covered = recordCoverage(provider, nodes);
  return servers
    .filter((s) => s.metadata.nodepool_provider_name === provider && !covered(s))
    .map((s) => ({
      externalId: s.id,
      name: s.name,
      nodeId: s.metadata.nodepool_node_id ?? null,
      pool: s.metadata.nodepool_pool_name ?? '',
      labels: s.metadata.nodepool_node_label ? [s.metadata.nodepool_node_label] : [],
    }));
}
