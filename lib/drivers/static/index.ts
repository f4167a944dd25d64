/**
 * The `static` driver: hands out pre-existing hosts (Nodepool's static driver). Config in
 * config.ts, host and store I/O in provider.ts, request decisions in handler.ts.
 */
import type { Driver } from '../contract/driver.js';
import { staticConfig, type StaticProviderConfig } from './config.js';
import { StaticProvider } from './provider.js';

export const staticDriver: Driver<StaticProviderConfig> = {
  ...staticConfig,
  createProvider: (config, ctx) => new StaticProvider(config, ctx),
};
