import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { OpenStackImageService } from '../../../lib/drivers/openstack/glance-image-service.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { runningProcesses } from '../../support/processes.js';
import {
  createBuilderEnv, fakeDiskimage, glanceAdmin, inProcessBuilder, loopbackProvider, runJob, testClient, type BuilderEnv,
} from '../../support/builder-env.js';

// An upload names its cloud image and tags it (nodepool_image_name) after `image-name`: one
// that is not the build's diskimage put img-a's file in the cloud as img-b, a leak nothing cleans.
describe('builder: image-upload checks image-name and provider against the sidecar and config', () => {
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;
  let glance: OpenStackImageService;
  const id = 'img-a-0000000001';

  before(async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), useLoopbackCloud()]);
    env = await createBuilderEnv({
      gearmanPort: gearmand.port,
      cloud,
      diskimages: [fakeDiskimage('img-a', { formats: ['qcow2'] }), fakeDiskimage('img-b', { formats: ['qcow2'] })],
      // `both` lists both diskimages (the check must not be "the provider lists image-name");
      // `only-b` lists only img-b.
      providers: [loopbackProvider('both', ['img-a', 'img-b']), loopbackProvider('only-b', ['img-b'])],
    });
    builder = inProcessBuilder(env);
    await builder.start();
    client = await testClient(gearmand.port);
    glance = await glanceAdmin(cloud);
    const built = await runJob(client, fn.imageBuild('img-a'), { 'image-id': id }, { unique: id });
    assert.equal(built.type, 'complete', built.message);
  });

  /** Deletes what an upload of the build left in Glance, so each test starts from none. */
  async function removeUploads(): Promise<void> {
    for (const image of await glance?.list({ properties: { nodepool_build_id: id } }) ?? []) await glance.delete(image.externalId);
  }

  after(async () => {
    await removeUploads();
    await client?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await gearmand?.stop();
    await cloud?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  const refused: Array<[string, Record<string, unknown>, RegExp]> = [
    ['another diskimage\'s name, to a provider listing both',
      { 'image-name': 'img-b', provider: 'both', 'upload-id': '0000000007' },
      /^image-upload:img-a-0000000001: image-name "img-b" is not the build's diskimage img-a$/],
    ['another diskimage\'s name and no upload id',
      { 'image-name': 'img-b', provider: 'both' },
      /image-name "img-b" is not the build's diskimage img-a/],
    ['another diskimage\'s name, to a provider listing only that one',
      { 'image-name': 'img-b', provider: 'only-b', 'upload-id': '0000000008' },
      /image-name "img-b" is not the build's diskimage img-a/],
    ['its own name, to a provider that does not list its diskimage',
      { 'image-name': 'img-a', provider: 'only-b', 'upload-id': '0000000009' },
      /^provider only-b does not list diskimage img-a$/],
  ];
  for (const [what, payload, expected] of refused) {
    it(`refuses ${what} with WORK_FAIL and uploads nothing`, async () => {
      try {
        const end = await runJob(client, fn.imageUpload(id), payload);
        assert.equal(end.type, 'fail', `expected fail, got ${end.type}: ${end.message} ${JSON.stringify(end.json)}`);
        assert.match(end.message, expected);
        assert.deepEqual(await glance.list({ properties: { nodepool_build_id: id } }), []);
      } finally {
        await removeUploads();
      }
    });
  }

  it('stays up and uploads the build under its own diskimage name', async () => {
    const end = await runJob(client, fn.imageUpload(id), { 'image-name': 'img-a', provider: 'both', 'upload-id': '0000000010' });
    assert.equal(end.type, 'complete', end.message);
    const images = await glance.list({ properties: { nodepool_build_id: id } });
    assert.deepEqual(images.map((i) => [i.externalId, i.properties.nodepool_image_name, i.properties.nodepool_upload_id]),
      [[end.json?.['external-id'], 'img-a', '0000000010']]);
    assert.match(String(end.json?.['external-name']), /^img-a-\d{10}$/);
  });
});
