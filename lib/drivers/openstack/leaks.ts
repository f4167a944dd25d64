/**
 * Leak detection (pure): which of a provider's servers no node record accounts for. A
 * server is ours when its metadata names this provider (and no other installation); it is
 * leaked when no record accounts for it, valid or corrupt (see {@link recordCoverage},
 * {@link LeakScope}).
 */
import { INSTALLATION_PROPERTY } from '../../store/installation.js';
import type { NodeRecord } from '../../store/models.js';
import type { NodeClaim } from '../../store/store.js';

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

/** What besides the listed records keeps a server from being a leak. */
export interface LeakScope {
  /**
   * Node records that do not validate (Store.listCorruptNodes): each covers every server whose
   * `nodepool_node_id` names it and the server its external id names, whatever its provider, as
   * Nodepool counts any znode that exists. A record we refuse (one Zuul wrote in a form we do
   * not know) must never get its server deleted.
   */
  corrupt?: readonly Pick<NodeClaim, 'id' | 'externalId'>[];
  /**
   * This store's installation id: a server whose `nodepool_installation_id` names another
   * installation is that installation's (same provider name, same cloud), never a leak here.
   * Servers without the key (made before servers carried it, or by Nodepool) are judged as before.
   */
  installation?: string;
}

/**
 * The provider's servers that no record covers: neither a listed record ({@link recordCoverage})
 * nor a corrupt one, and not another installation's ({@link LeakScope}).
 */
export function findLeakedServers(servers: readonly ServerTags[], provider: string, nodes: readonly Pick<NodeRecord, 'id' | 'externalId'>[],
  scope: LeakScope = {}): LeakedServer[] {
  const covered = recordCoverage(provider, nodes);
  const corruptIds = new Set((scope.corrupt ?? []).map((c) => c.id));
  const corruptExternal = new Set((scope.corrupt ?? []).flatMap((c) => (c.externalId ? [c.externalId] : [])));
  const othersServer = (s: ServerTags): boolean => {
    const tagged = s.metadata[INSTALLATION_PROPERTY];
    return tagged !== undefined && scope.installation !== undefined && tagged !== scope.installation;
  };
  return servers
    .filter((s) => s.metadata.nodepool_provider_name === provider && !covered(s) && !othersServer(s)
      && !corruptExternal.has(s.id) && !(s.metadata.nodepool_node_id !== undefined && corruptIds.has(s.metadata.nodepool_node_id)))
    .map((s) => ({
      externalId: s.id,
      name: s.name,
      nodeId: s.metadata.nodepool_node_id ?? null,
      pool: s.metadata.nodepool_pool_name ?? '',
      labels: s.metadata.nodepool_node_label ? [s.metadata.nodepool_node_label] : [],
    }));
}
