/**
 * The driver contract against the static driver, with a real sshd on loopback as the host:
 * nodes are registered by the provider, a node "runs" while its host answers a TCP connect, and
 * a leak is the host's records removed behind the provider's back (its cleanup registers it again).
 */
import { driverContract } from '../../../contract/driver.contract.js';
import { staticDriver } from '../../../../lib/drivers/static/index.js';
import type { StaticProviderConfig } from '../../../../lib/drivers/static/config.js';
import { portOpen } from '../../../support/processes.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';
import { testLogger } from '../../../support/test-log.js';
import { StaticEnv } from './static-env.js';

let sshd: SshdHandle | undefined;
let env: StaticEnv | undefined;

driverContract<StaticProviderConfig>('static', {
  driver: staticDriver,
  nodes: 'register',
  timeoutMs: 20_000,
  async setUp() {
    sshd = await startSshd({ host: '127.0.0.2' });
    env = await StaticEnv.create();
    const { config, provider } = env.config([{ name: sshd.host, port: sshd.port, hostKey: [sshd.hostKey('ed25519')] }]);
    const ctx = { ...env.ctx(config), log: testLogger() };
    return { config, provider, pool: 'main', label: 'small', ctx };
  },
  async tearDown() {
    await sshd?.stop();
    await env?.close();
  },
  runs: (node) => portOpen(node.connectionPort, node.interfaceIp ?? undefined),
  async leak(provider) {
    if (!env || !sshd) throw new Error('not set up');
    const store = env.store;
    const host = sshd.host;
    const ofHost = async () => (await store.listNodes({ provider: provider.name })).filter((n) => n.hostname === host);
    for (const n of await ofHost()) await store.deleteNode(n.id); // no nodeDeleted: the provider is not told
    return {
      what: `host ${host}:${sshd.port} with no node record`,
      present: async () => !(await ofHost()).some((n) => n.state === 'ready'),
    };
  },
});
