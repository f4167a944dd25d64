/**
 * The image-service contract against the qemu driver's local image store: its image-dir in a
 * temp dir, the service built through the driver registry as a builder or server builds it.
 * No VM boots here.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { imageServiceContract } from '../../../contract/image-service.contract.js';
import type { DriverHosts } from '../../../../lib/drivers/core/driver-hosts.js';
import { testImageServices } from '../../../support/image-services.js';
import { testLogger } from '../../../support/test-log.js';
import { QemuEnv } from './qemu-env.js';

let env: QemuEnv | undefined;
let hosts: DriverHosts | undefined;

imageServiceContract('qemu', {
  async setUp() {
    env = await QemuEnv.create();
    const { provider } = env.config();
    hosts = testImageServices(() => undefined, testLogger());
    return hosts(provider);
  },
  async tearDown() {
    await hosts?.close();
    await env?.close();
  },
  async storageFiles() {
    if (!env) return [];
    return (await readdir(env.imageDir).catch(() => [])).sort();
  },
  missingId: () => `contract-missing-${randomBytes(4).toString('hex')}`,
});
