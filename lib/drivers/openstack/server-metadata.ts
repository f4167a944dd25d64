/**
 * The Nova metadata of a new server, in Nodepool's order (adapter.py `_createServer`):
 * `groups` (`<provider>,<image>,<label>`, for Ansible inventories), then the label's
 * `instance-properties`, then its `dynamic-instance-properties`, then the keys that identify
 * the node, which win over anything a property set: `nodepool_node_id`,
 * `nodepool_pool_name`, `nodepool_provider_name`, and ours beside them
 * (`nodepool_image_name`, `nodepool_node_label`, which leak detection reads, and
 * `nodepool_installation_id`, the store's installation: leak cleanup leaves another
 * installation's servers alone, issue 31 §12). Pure.
 */
import { INSTALLATION_PROPERTY } from '../../store/installation.js';

/** What the metadata is made of. */
export interface ServerMetadataInput {
  provider: string;
  pool: string;
  label: string;
  /** The diskimage or cloud-image name. */
  imageName: string;
  nodeId: string;
  instanceProperties: Readonly<Record<string, string>>;
  /** Already formatted (dynamic-properties.ts). */
  dynamicProperties: Readonly<Record<string, string>>;
  /** The store's installation id (lib/store/installation.ts); left out when not known. */
  installation?: string;
}

export function serverMetadata(i: ServerMetadataInput): Record<string, string> {
  return {
    groups: [i.provider, i.imageName, i.label].join(','),
    ...i.instanceProperties,
    ...i.dynamicProperties,
    nodepool_node_id: i.nodeId,
    nodepool_pool_name: i.pool,
    nodepool_provider_name: i.provider,
    nodepool_image_name: i.imageName,
    nodepool_node_label: i.label,
    ...(i.installation !== undefined ? { [INSTALLATION_PROPERTY]: i.installation } : {}),
  };
}
