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

/** The provider's servers that no record covers. */
export function findLeakedServers(servers: readonly ServerTags[], provider: string, nodes: readonly Pick<NodeRecord, 'id' | 'externalId'>[]): LeakedServer[] {
  const ids = new Set(nodes.map((n) => n.id));
  const externalIds = new Set(nodes.flatMap((n) => (n.externalId ? [n.externalId] : [])));
  return servers
    .filter((s) => s.metadata.nodepool_provider_name === provider)
    .filter((s) => !ids.has(s.metadata.nodepool_node_id ?? '') && !externalIds.has(s.id))
    .map((s) => ({
      externalId: s.id,
      name: s.name,
      nodeId: s.metadata.nodepool_node_id ?? null,
      pool: s.metadata.nodepool_pool_name ?? '',
      labels: s.metadata.nodepool_node_label ? [s.metadata.nodepool_node_label] : [],
    }));
}
