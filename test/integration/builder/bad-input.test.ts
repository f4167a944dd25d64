import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import {
  createBuilderEnv, fakeDiskimage, inProcessBuilder, runJob, testClient, type BuilderEnv,
} from '../../support/builder-env.js';

describe('builder: malformed payloads and ids get WORK_FAIL and the worker stays up', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;
  let sentinel: string;
  const good = 'ubuntu-0000000007';

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({
      gearmanPort: gearmand.port,
      diskimages: [fakeDiskimage('ubuntu'), fakeDiskimage('other')],
      providers: [
        { name: 'lab', driver: 'static', pools: [] },
        { name: 'c1', driver: 'openstack', cloud: 'nowhere', diskimages: [{ name: 'other' }] },
      ],
    });
    // A file outside images-dir that a traversal would hit.
    sentinel = path.join(env.dir, 'x');
    await writeFile(sentinel, 'keep me');
    builder = inProcessBuilder(env);
    await builder.start();
    client = await testClient(gearmand.port);
    const built = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': good });
    assert.equal(built.type, 'complete', built.message);
  });

  after(async () => {
    await client?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  const buildCases: Array<[string, string, RegExp]> = [
    ['not JSON', 'image-id: x', /not JSON/],
    ['a JSON list', '["ubuntu-0000000001"]', /must be a JSON object, got a list/],
    ['a JSON string', '"ubuntu-0000000001"', /must be a JSON object/],
    ['no image-id', '{}', /missing "image-id"/],
    ['a numeric image-id', '{"image-id": 1}', /image id must be a string, got number/],
    ['a traversal id', '{"image-id": "../x"}', /invalid image id "\.\.\/x"/],
    ['a traversal id with a valid tail', '{"image-id": "../ubuntu-0000000001"}', /invalid image id/],
    ['a slash in the id', '{"image-id": "a/b-0000000001"}', /invalid image id "a\/b-0000000001"/],
    ['a dot-dot diskimage', '{"image-id": "..-0000000001"}', /invalid image id/],
    ['a NUL byte', '{"image-id": "ubuntu\\u0000-0000000001"}', /invalid image id/],
    ['a short sequence', '{"image-id": "ubuntu-1"}', /expected <diskimage>-<10 digits( or 32 hex)?>/],
    ['an unknown diskimage', '{"image-id": "nosuch-0000000001"}', /names diskimage "nosuch", which this builder does not know/],
    ['another diskimage\'s id', '{"image-id": "other-0000000001"}', /belongs to diskimage other/],
    ['an oversized payload', JSON.stringify({ 'image-id': good, pad: 'x'.repeat(70_000) }), /more than 65536/],
  ];
  for (const [what, payload, expected] of buildCases) {
    it(`image-build with ${what} → WORK_FAIL`, async () => {
      const end = await runJob(client, fn.imageBuild('ubuntu'), payload, { raw: true });
      assert.equal(end.type, 'fail', `expected fail, got ${end.type}: ${end.message}`);
      assert.match(end.message, expected);
    });
  }

  const uploadCases: Array<[string, string, RegExp]> = [
    ['not JSON', '{', /not JSON/],
    ['no image-name', '{"provider": "c1"}', /missing "image-name"/],
    ['no provider', '{"image-name": "ubuntu"}', /missing "provider"/],
    ['a non-string provider', '{"image-name": "ubuntu", "provider": ["c1"]}', /"provider" must be a string/],
    ['a control character in the name', '{"image-name": "ubuntu\\n", "provider": "c1"}', /"image-name" must be a string of 1-255 printable/],
    ['an unknown provider', '{"image-name": "ubuntu", "provider": "nope"}', /provider nope is not in this builder's config/],
    ['a static provider', '{"image-name": "ubuntu", "provider": "lab"}', /provider lab \(driver static\) does not take image uploads/],
    ['a provider that does not list the image', '{"image-name": "ubuntu", "provider": "c1"}', /provider c1 does not list diskimage ubuntu/],
    ['another diskimage\'s name', '{"image-name": "other", "provider": "c1"}', /image-name "other" is not the build's diskimage ubuntu/],
    ['a non-string meta value', '{"image-name": "ubuntu", "provider": "c1", "meta": {"a": 1}}', /meta\.a must be a string/],
  ];
  for (const [what, payload, expected] of uploadCases) {
    it(`image-upload with ${what} → WORK_FAIL`, async () => {
      const end = await runJob(client, fn.imageUpload(good), payload, { raw: true });
      assert.equal(end.type, 'fail', `expected fail, got ${end.type}: ${end.message}`);
      assert.match(end.message, expected);
    });
  }

  it('image-delete with a malformed payload → WORK_FAIL, and the image is kept', async () => {
    const end = await runJob(client, fn.imageDelete(good), '[1,2', { raw: true });
    assert.equal(end.type, 'fail');
    assert.match(end.message, /image-delete payload is not JSON/);
    assert.ok(existsSync(path.join(env.imagesDir, `${good}.qcow2`)));
  });

  for (const formats of [[], ['exe'], 'qcow2']) {
    it(`image-delete with formats ${JSON.stringify(formats)} → WORK_FAIL, and the image is kept whole`, async () => {
      const end = await runJob(client, fn.imageDelete(good), { formats });
      assert.equal(end.type, 'fail');
      assert.match(end.message, /image-delete payload: "formats" must be a non-empty list of image formats/);
      assert.ok(existsSync(path.join(env.imagesDir, `${good}.qcow2`)));
      assert.ok(existsSync(path.join(env.imagesDir, `${good}.json`)));
    });
  }

  it('a build whose DIB exits non-zero → WORK_FAIL naming the exit code and log, and no files left', async () => {
    await env.rewrite({ diskimages: [fakeDiskimage('ubuntu', {}, { FAKE_DIB_EXIT: '100' }), fakeDiskimage('other')] });
    builder.reconfigure(env.config);
    const end = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': 'ubuntu-0000000008' });
    assert.equal(end.type, 'fail');
    assert.match(end.message, /disk-image-create for ubuntu-0000000008 exited with 100: .*failure injected/);
    assert.match(end.message, /build log: \S+\/ubuntu-0000000008\.log/);
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith('ubuntu-0000000008')), []);
  });

  it('a missing dib-cmd → WORK_FAIL saying it cannot run', async () => {
    await env.rewrite({ diskimages: [fakeDiskimage('ubuntu', { 'dib-cmd': '/nonexistent/disk-image-create' }), fakeDiskimage('other')] });
    builder.reconfigure(env.config);
    const end = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': 'ubuntu-0000000009' });
    assert.equal(end.type, 'fail');
    assert.match(end.message, /cannot run \/nonexistent\/disk-image-create: spawn \/nonexistent\/disk-image-create ENOENT/);
  });

  it('after all that the worker is alive, nothing outside images-dir was touched, and a good build works', async () => {
    await env.rewrite({ diskimages: [fakeDiskimage('ubuntu'), fakeDiskimage('other')] });
    builder.reconfigure(env.config);
    const end = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': 'ubuntu-0000000010' });
    assert.equal(end.type, 'complete', end.message);
    assert.ok(existsSync(sentinel), 'the file beside images-dir is still there');
    assert.deepEqual(builder.localImages(), [good, 'ubuntu-0000000010']);
  });

  it('answers "already complete" only for the build record that made the files: another record with the same id → WORK_FAIL', async () => {
    const id = 'ubuntu-0000000011';
    const first = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': id, created: 1_700_000_000_000 });
    assert.equal(first.type, 'complete', first.message);
    const again = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': id, created: 1_700_000_000_000 });
    assert.equal(again.type, 'complete', 'the same record (a resubmission after a server restart) gets the files');
    const other = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': id, created: 1_800_000_000_000 });
    assert.equal(other.type, 'fail');
    assert.match(other.message, /ubuntu-0000000011 here is another build with the same id .*state reset or restored/);
    const bad = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': id, created: 'yesterday' });
    assert.equal(bad.type, 'fail');
    assert.match(bad.message, /"created" must be epoch milliseconds, got "yesterday"/);
    assert.ok(existsSync(path.join(env.imagesDir, `${id}.qcow2`)), 'the files stay');
  });

  it('a build whose DIB exits 0 but leaves a cut image → WORK_FAIL naming the file and what qemu-img said, no files left', async () => {
    await env.rewrite({ diskimages: [fakeDiskimage('ubuntu', { formats: ['qcow2', 'raw'] }, { FAKE_DIB_TRUNCATE: '196608' }), fakeDiskimage('other')] });
    builder.reconfigure(env.config);
    try {
      const end = await runJob(client, fn.imageBuild('ubuntu'), { 'image-id': 'ubuntu-0000000012' });
      assert.equal(end.type, 'fail', end.message);
      assert.match(end.message, /ubuntu-0000000012\.qcow2 is not a usable qcow2 image: .*(corruptions|its data ends at byte \d+ but the file has 196608)/);
      assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith('ubuntu-0000000012')), []);
      assert.ok(!builder.localImages().includes('ubuntu-0000000012'));
    } finally {
      await env.rewrite({ diskimages: [fakeDiskimage('ubuntu'), fakeDiskimage('other')] });
      builder.reconfigure(env.config);
    }
  });
});
