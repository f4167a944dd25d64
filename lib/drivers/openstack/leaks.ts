/**
 * Leak detection (pure): which of a provider's servers no node record accounts for. A
 * server is ours when its metadata names this provider; it is leaked when no record accounts
 * for it (see {@link recordCoverage}).
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
 * Whether a node record covers a server: the server is this provider's and a record carries
 * its id as `externalId` (its node, or a leak the cleanup already took over as a `deleting`
 * record), or its `nodepool_node_id` has a record that names no server yet (a launch in
 * progress). A record that names another server does not cover it: that is an earlier attempt
 * of a launch whose create Nova carried out but did not answer. Leak detection and quota use
 * the same rule.
 */
export function recordCoverage(provider: string, nodes: readonly Pick<NodeRecord, 'id' | 'externalId'>[]): (s: Pick<ServerTags, 'id' | 'metadata'>) => boolean {
  const serverOf = new Map(nodes.map((n) => [n.id, n.externalId]));
  const externalIds = new Set(nodes.flatMap((n) => (n.externalId ? [n.externalId] : [])));
  return (s) => {
    if (s.metadata.nodepool_provider_name !== provider) return false;
    if (externalIds.has(s.id)) return true;
    const nodeId = s.metadata.nodepool_node_id;
    return nodeId !== undefined && serverOf.has(nodeId) && !serverOf.get(nodeId);
  };
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
