/**
 * Test support: an openstack provider built from a nodepool.yaml and started against a
 * {@link ScriptedCloud} (its host access opened on first use), for tests that drive one
 * provider's launches against scripted Nova answers.
 */
import assert from 'node:assert/strict';
import { parseConfig } from '../../lib/config/load.js';
import { OpenStackAccess } from '../../lib/drivers/openstack/access.js';
import { OpenStackProvider } from '../../lib/drivers/openstack/provider.js';
import { silentLogger } from '../../lib/log.js';
import type { Store } from '../../lib/store/store.js';
import type { ScriptedCloud } from './scripted-cloud.js';

/** A started provider and how to stop it (and close its host access). */
export interface ScriptedProvider {
  provider: OpenStackProvider;
  stop(): Promise<void>;
}

/** Starts the first provider of `yamlText` (an openstack one; asserted) against `cloud`, `configPath` naming the file. */
export async function startScriptedProvider(cloud: ScriptedCloud, store: Store, yamlText: string, configPath: string): Promise<ScriptedProvider> {
  const config = parseConfig(yamlText, configPath);
  const pc = config.providers[0];
  assert.equal(pc?.driver, 'openstack');
  let access: OpenStackAccess | undefined;
  const provider = new OpenStackProvider(pc, {
    store, log: silentLogger(), clock: Date.now, config, sessionId: () => 'unused',
    hostAccess: async () => (access ??= await OpenStackAccess.create(cloud.creds())),
  }, { deleteTimeoutMs: 2000 });
  await provider.start();
  return {
    provider,
    async stop() {
      await provider.stop();
      access?.close();
    },
  };
}
