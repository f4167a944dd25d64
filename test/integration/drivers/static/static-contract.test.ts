/**
 * The driver contract against the static driver, with a real sshd on loopback as the host.
 */
import { driverContract } from '../../../contract/driver.contract.js';
import { staticDriver } from '../../../../lib/drivers/static/index.js';
import type { StaticProviderConfig } from '../../../../lib/drivers/static/config.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';
import { testLogger } from '../../../support/test-log.js';
import { StaticEnv } from './static-env.js';

let sshd: SshdHandle | undefined;
let env: StaticEnv | undefined;

driverContract<StaticProviderConfig>('static', {
  driver: staticDriver,
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
});
