/**
 * The driver contract against the qemu driver: real QEMU VMs booted from the cached bootable
 * DIB image (test/support/qemu-image.ts), uploaded through the driver's image service. The
 * suite launches three nodes one after the other (ready, deleted, leaked), so it boots three
 * times; each boot takes about a minute under TCG.
 */
import { driverContract } from '../../../contract/driver.contract.js';
import { qemuDriver } from '../../../../lib/drivers/qemu/index.js';
import type { QemuProviderConfig } from '../../../../lib/drivers/qemu/config.js';
import { VmHost } from '../../../../lib/drivers/qemu/vm-host.js';
import { bootableImage } from '../../../support/qemu-image.js';
import { testLogger } from '../../../support/test-log.js';
import { QemuEnv } from './qemu-env.js';

let env: QemuEnv | undefined;

driverContract<QemuProviderConfig>('qemu', {
  driver: qemuDriver,
  timeoutMs: 420_000,
  async setUp() {
    const image = await bootableImage();
    if (image.buildSeconds) console.log(`# bootable image built in ${image.buildSeconds} s`);
    env = await QemuEnv.create();
    await env.readyUpload(image.path);
    const { config, provider } = env.config({ maxServers: 3, memory: 768 });
    return { config, provider, pool: 'main', label: 'vm', ctx: env.ctx(config) };
  },
  async tearDown() {
    if (!env) return;
    // The suite leaves its first node's VM running: stop it the driver's way.
    const vms = new VmHost({ stateDir: env.stateDir, provider: 'vms', qemuBinary: 'qemu-system-x86_64', log: testLogger() });
    for (const vm of await vms.list()) await vms.destroy(vm.record.id);
    const left = await env.qemuPids();
    await env.close();
    if (left.length) throw new Error(`QEMU processes left running: ${left.join(', ')}`);
  },
});
