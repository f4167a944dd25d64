/**
 * The image-service contract against the qemu driver's local image store: its image-dir in a
 * temp dir, the service built through the driver registry as a builder or server builds it.
 * No VM boots here.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { imageServiceContract } from '../../../contract/image-service.contract.js';
import { testImageServices } from '../../../support/image-services.js';
import { testLogger } from '../../../support/test-log.js';
import { QemuEnv } from './qemu-env.js';

let env: QemuEnv | undefined;

imageServiceContract('qemu', {
  async setUp() {
    env = await QemuEnv.create();
    const { provider } = env.config();
    return testImageServices(() => undefined, testLogger())(provider);
  },
  async tearDown() {
    await env?.close();
  },
  async storageFiles() {
    if (!env) return [];
    return (await readdir(env.imageDir).catch(() => [])).sort();
  },
  missingId: () => `contract-missing-${randomBytes(4).toString('hex')}`,
});
