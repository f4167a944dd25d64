/**
 * The driver contract against the qemu driver: real QEMU VMs of the cached bootable DIB image
 * (test/support/qemu-image.ts), uploaded through the driver's image service. The suite launches
 * one node, reads it, then deletes it; its subject is the driver, not the boot, so the node's
 * guest is resumed from the run's saved guest (test/support/qemu-saved-guest.ts, through the
 * provider's `qemu-binary:`) in seconds. The leak is a real 256 MB VM started beside the driver
 * (QEMU running from the same upload, tagged with a node id no record has), which the leak
 * cleanup must kill.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { driverContract } from '../../../contract/driver.contract.js';
import { qemuDriver } from '../../../../lib/drivers/qemu/index.js';
import type { QemuProviderConfig } from '../../../../lib/drivers/qemu/config.js';
import { VmHost } from '../../../../lib/drivers/qemu/vm-host.js';
import type { UploadRecord } from '../../../../lib/store/models.js';
import { portOpen } from '../../../support/processes.js';
import { bootableImage } from '../../../support/qemu-image.js';
import { qemuResumeWrapper, SAVED_GUEST_MEMORY, savedGuest } from '../../../support/qemu-saved-guest.js';
import { testLogger } from '../../../support/test-log.js';
import { QemuEnv } from './qemu-env.js';

let env: QemuEnv | undefined;
let upload: UploadRecord | undefined;

/** The VMs of the test provider, read from its state dir as the driver reads them. */
const vmsOf = (e: QemuEnv): VmHost => new VmHost({ stateDir: e.stateDir, provider: 'vms', qemuBinary: 'qemu-system-x86_64', log: testLogger() });

driverContract<QemuProviderConfig>('qemu', {
  driver: qemuDriver,
  nodes: 'launch',
  timeoutMs: 420_000,
  async setUp() {
    const image = await bootableImage();
    if (image.buildSeconds) console.log(`# bootable image built in ${image.buildSeconds} s`);
    const saved = await savedGuest();
    if (saved.saveSeconds) console.log(`# saved guest booted and saved in ${saved.saveSeconds} s`);
    env = await QemuEnv.create();
    upload = await env.readyUpload(image.path);
    const qemuBinary = await qemuResumeWrapper(saved, env.dir);
    const { config, provider } = env.config({ maxServers: 3, memory: SAVED_GUEST_MEMORY, qemuBinary });
    return { config, provider, pool: 'main', label: 'vm', ctx: env.ctx(config) };
  },
  async tearDown() {
    if (!env) return;
    // A case that failed half-way may leave its node's VM running: stop it the driver's way.
    const vms = vmsOf(env);
    for (const vm of await vms.list()) await vms.destroy(vm.record.id);
    const left = await env.qemuPids();
    await env.close();
    if (left.length) throw new Error(`QEMU processes left running: ${left.join(', ')}`);
  },
  async runs(node) {
    if (!env || !node.externalId) return false;
    return (await vmsOf(env).runningPid(node.externalId)) !== null && portOpen(node.connectionPort);
  },
  async leak(_provider, pool, label) {
    if (!env || !upload?.externalId) throw new Error('not set up');
    const vms = vmsOf(env);
    const id = '9999999999-leak';
    const vm = await vms.create(id, {
      nodeId: '9999999999', pool, label, image: upload.externalId, imagePath: path.join(env.imageDir, `${upload.externalId}.qcow2`),
      hostname: 'leaked', accel: 'tcg', memory: 256, cpus: 1, authorizedKeys: [],
    });
    return {
      what: `VM ${id} (QEMU pid ${vm.pid ?? 'none'}) with no node record`,
      present: async () => (await vms.runningPid(id)) !== null || existsSync(vms.dir(id)),
    };
  },
});
