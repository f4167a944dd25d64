import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { runningProcesses } from '../../support/processes.js';
import {
  createBuilderEnv, fakeDiskimage, glanceAdmin, inProcessBuilder, loopbackProvider, runJob, testClient, type BuilderEnv,
} from '../../support/builder-env.js';

describe('two builders on one gearmand', () => {
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  const envs: BuilderEnv[] = [];
  const builders: DibBuilder[] = [];
  let client: GearmanClient;
  const ids = [1, 2, 3, 4].map((n) => `deb-${String(n).padStart(10, '0')}`);

  before(async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), useLoopbackCloud()]);
    for (const name of ['a', 'b']) {
      const env = await createBuilderEnv({
        name, gearmanPort: gearmand.port, cloud,
        diskimages: [fakeDiskimage('deb', {}, { FAKE_DIB_DELAY: '0.2' })],
        providers: [loopbackProvider('cloud', ['deb'])],
      });
      envs.push(env);
      const b = inProcessBuilder(env, { hostname: `builder-${name}` });
      builders.push(b);
      await b.start();
    }
    client = await testClient(gearmand.port);
  });

  after(async () => {
    await client?.stop();
    await Promise.all(builders.map((b) => b.stop({ abortAfterMs: 1000 })));
    await gearmand?.stop();
    await cloud?.stop();
    await Promise.all(envs.map((e) => e.remove()));
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('spreads concurrent builds over both builders (one build at a time each)', async () => {
    const ends = await Promise.all(ids.map((id) => runJob(client, fn.imageBuild('deb'), { 'image-id': id }, { unique: id })));
    for (const end of ends) assert.equal(end.type, 'complete', end.message);
    const [a, b] = builders.map((x) => x.localImages());
    assert.ok(a?.length && b?.length, `both built something: a=${JSON.stringify(a)} b=${JSON.stringify(b)}`);
    assert.deepEqual([...(a ?? []), ...(b ?? [])].sort(), ids);
    const byHost = new Map(ends.map((e) => [String(e.json?.['image-id']), String(e.json?.builder)]));
    for (const id of a ?? []) assert.equal(byHost.get(id), 'builder-a');
    for (const id of b ?? []) assert.equal(byHost.get(id), 'builder-b');
  });

  it('advertises each image only from the builder that holds it', async () => {
    const workers = await adminWorkers(gearmand.address);
    for (const [i, builder] of builders.entries()) {
      const fns = workers.filter((w) => w.clientId === builder.clientId).flatMap((w) => w.functions);
      const other = builders[1 - i];
      for (const id of builder.localImages()) assert.ok(fns.includes(fn.imageUpload(id)), `${builder.clientId} advertises ${id}`);
      for (const id of other?.localImages() ?? []) assert.ok(!fns.includes(fn.imageUpload(id)), `${builder.clientId} does not advertise ${id}`);
    }
  });

  it('runs every upload on the builder holding the id', async () => {
    const uploadedBy = new Map<string, string>();
    for (const builder of builders) builder.on('upload:complete', (e) => uploadedBy.set(e.imageId, builder.hostname));
    const glance = await glanceAdmin(cloud);
    for (const id of ids) {
      const end = await runJob(client, fn.imageUpload(id), { 'image-name': 'deb', provider: 'cloud' });
      assert.equal(end.type, 'complete', end.message);
      const holder = builders.find((b) => b.localImages().includes(id));
      assert.equal(uploadedBy.get(id), holder?.hostname, `upload of ${id}`);
      await glance.delete(String(end.json?.['external-id']));
    }
  });
});
