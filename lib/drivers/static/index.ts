/**
 * The `static` driver: hands out pre-existing hosts (Nodepool's static driver). Config in
 * config.ts, host and store I/O in provider.ts, request decisions in handler.ts.
 */
import type { Driver, PoolInfo } from '../driver.js';
import { staticProviderSchema, type StaticProviderConfig } from './config.js';
import { StaticProvider } from './provider.js';

/** A pool's labels: every label of its hosts, in config order. */
function pools(config: StaticProviderConfig): PoolInfo[] {
  return config.pools.map((p) => ({
    name: p.name,
    maxServers: p.maxServers,
    labels: [...new Set(p.nodes.flatMap((n) => n.labels))],
    nodeAttributes: p.nodeAttributes,
  }));
}

export const staticDriver: Driver<StaticProviderConfig> = {
  name: 'static',
  providerSchema: staticProviderSchema,
  manageImages: () => false,
  pools,
  createProvider: (config, ctx) => new StaticProvider(config, ctx),
};
