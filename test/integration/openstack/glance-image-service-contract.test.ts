/**
 * The image-service contract against the openstack driver's Glance, on the shared loopback
 * Keystone + Glance (test/support/openstack.ts), the service built through the driver registry
 * from a provider of the real loader (`clouds-file` naming the loopback clouds.yaml), as a
 * builder or server builds it. Here, not under integration/drivers/openstack/: the test runner
 * starts the full Nova cloud for every file there, and this one boots no server.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../../lib/config/load.js';
import { imageServiceContract } from '../../contract/image-service.contract.js';
import type { DriverHosts } from '../../../lib/drivers/core/driver-hosts.js';
import { testImageServices } from '../../support/image-services.js';
import { LOOPBACK_REGION, useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { testLogger } from '../../support/test-log.js';

let cloud: LoopbackCloud | undefined;
let dir: string | undefined;
let hosts: DriverHosts | undefined;

imageServiceContract('openstack (Glance)', {
  async setUp() {
    cloud = await useLoopbackCloud();
    dir = await mkdtemp(path.join(os.tmpdir(), 'glance-contract-'));
    const config = parseConfig([
      `clouds-file: ${JSON.stringify(cloud.cloudsYamlPath)}`,
      'diskimages: [{name: deb}]',
      'providers:',
      '  - name: glance-contract',
      `    cloud: ${cloud.cloudName}`,
      `    region-name: ${LOOPBACK_REGION}`,
      '    diskimages: [{name: deb}]',
      '    pools: []',
      '',
    ].join('\n'), path.join(dir, 'nodepool.yaml'));
    const [provider] = config.providers;
    if (!provider) throw new Error('test config has no provider');
    hosts = testImageServices(() => config.cloudsFile, testLogger());
    return hosts(provider);
  },
  async tearDown() {
    await hosts?.close();
    await cloud?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  },
  missingId: () => randomUUID(),
});
