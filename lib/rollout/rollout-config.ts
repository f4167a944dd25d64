/**
 * Which `rollout:` settings hold for a provider's diskimage (issue 24 §3): the provider
 * diskimage's own, else the top-level diskimage's (itself inherited through `parent`, see
 * lib/config/diskimages.ts), else none (a new upload serves every launch at once). Pure: reads the loaded
 * config only. The keys' schema is rollout-schema.ts.
 */
import { imageTarget } from '../drivers/config-registry.js';
import type { Config } from '../config/schema.js';
import type { RolloutSettings } from './rollout-policy.js';

/** The loaded config, as the rollout's readers name it. */
export type NodepoolConfig = Config;

/**
 * The settings for `diskimage`'s uploads on `provider`: the provider diskimage's `rollout:`
 * when it has one, else the top-level diskimage's; undefined when neither says (or the
 * diskimage is not in the config).
 */
export function rolloutSettingsFor(config: NodepoolConfig, provider: string, diskimage: string): RolloutSettings | undefined {
  const p = config.providers.find((x) => x.name === provider);
  const own = p ? imageTarget(p, diskimage)?.rollout : undefined;
  if (own) return own;
  return config.diskimages.find((d) => d.name === diskimage)?.rollout ?? undefined;
}

/**
 * The settings of every diskimage `provider` takes, by diskimage (null: none): what a running
 * provider depends on beyond its own config entry, so a reload that changes a top-level
 * diskimage's `rollout:` restarts the providers it applies to (compare with configEquals).
 */
export function providerRollouts(config: NodepoolConfig, provider: string): Record<string, RolloutSettings | null> {
  const p = config.providers.find((x) => x.name === provider);
  if (!p) return {};
  const out: Record<string, RolloutSettings | null> = {};
  for (const name of new Set(config.diskimages.map((d) => d.name))) {
    if (imageTarget(p, name)) out[name] = rolloutSettingsFor(config, provider, name) ?? null;
  }
  return out;
}
