/**
 * What a running provider reads of the config beyond its own entry, so a reload that changes
 * it restarts the provider as a change to the entry does (compare with configEquals):
 * - the `rollout:` settings of each diskimage it takes (lib/rollout/rollout-config.ts);
 * - the node keys of each top-level diskimage it takes (`username`, `python-path`,
 *   `shell-type`), which go into the record of every node booted from that diskimage.
 * Pure: reads the loaded config only.
 */
import { imageTarget } from '../drivers/config-registry.js';
import { providerRollouts, type NodepoolConfig } from '../rollout/rollout-config.js';

/** A top-level diskimage's keys that a node booted from it records. */
export interface DiskimageNodeKeys {
  username: string;
  pythonPath: string;
  shellType: string | null;
}

export interface ProviderInputs {
  rollouts: ReturnType<typeof providerRollouts>;
  /** By diskimage name: the diskimages the provider takes. */
  nodeKeys: Record<string, DiskimageNodeKeys>;
}

/** The inputs of `provider` in `config` (empty when the config has no such provider). */
export function providerInputs(config: NodepoolConfig, provider: string): ProviderInputs {
  const p = config.providers.find((x) => x.name === provider);
  const nodeKeys: Record<string, DiskimageNodeKeys> = {};
  for (const d of p ? config.diskimages.filter((x) => imageTarget(p, x.name)) : []) {
    nodeKeys[d.name] = { username: d.username, pythonPath: d.pythonPath, shellType: d.shellType ?? null };
  }
  return { rollouts: providerRollouts(config, provider), nodeKeys };
}
