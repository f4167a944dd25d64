import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fn } from '../../../lib/gearman/functions.js';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';

// Nodepool 11's post-upload-hook, run by the builder: `<script> <provider> <external-id>
// <local-file>` after the upload; rc != 0 deletes the image and fails the upload.
describe('builder: post-upload-hook', () => {
  let sys: ImageSystem;
  let hook: string;
  /** `<provider>` whose hook fails while this file exists. */
  const failFlag = (provider: string): string => path.join(sys.dir, `hook-fail-${provider}`);
  const seen = (provider: string): string => path.join(sys.dir, `hook-${provider}.args`);

  before(async () => {
    // The config needs the hook's path, and the system's directory exists only once it starts:
    // start with no hook, then reconfigure (server and builder) before any build is asked for.
    sys = await ImageSystem.start({ diskimages: [], providers: [], lifecycle: { 'retry-delay': 1, 'max-retry-delay': 2 } });
    hook = path.join(sys.dir, 'hook.sh');
    await writeFile(hook, [
      '#!/bin/sh',
      `printf '%s\\n' "$#" "$@" > ${sys.dir}/hook-$1.args`,
      'if test -f "$3"; then echo file-exists >> ' + `${sys.dir}/hook-$1.args; fi`,
      `if test -f ${sys.dir}/hook-fail-$1; then echo "checking image $2"; echo "image $2 has no sshd" >&2; exit 3; fi`,
      'echo "image $2 looks fine"',
      '',
    ].join('\n'));
    await chmod(hook, 0o755);
    await writeFile(failFlag('bad'), '');
    const diskimages = [fakeDiskimage('deb', { formats: ['qcow2'] })];
    const providers = [
      { ...loopbackProvider('good', ['deb']), 'post-upload-hook': hook },
      { ...loopbackProvider('bad', ['deb']), 'post-upload-hook': hook },
      loopbackProvider('plain', ['deb']),
    ];
    await sys.reconfigure({ diskimages, providers });
    await sys.addBuilder('a');
    await sys.startServer();
  });

  after(async () => {
    await sys?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('makes the upload ready when the hook exits 0, having given it the provider, the image id and the uploaded file', async () => {
    const s = await sys.waitForState('good upload ready', (x) => x.uploads.some((u) => u.provider === 'good' && u.state === 'ready'), 60_000);
    const upload = s.uploads.find((u) => u.provider === 'good' && u.state === 'ready')!;
    const imagesDir = sys.builders.get('a')!.env.imagesDir;
    assert.deepEqual((await readFile(seen('good'), 'utf8')).trim().split('\n'),
      ['3', 'good', upload.externalId, path.join(imagesDir, `${upload.buildId}.qcow2`), 'file-exists']);
    assert.deepEqual((await sys.glanceImages({ nodepool_provider_name: 'good' })).map((i) => i.externalId), [upload.externalId]);
  });

  it('leaves a provider without a hook as it was', async () => {
    await sys.waitForState('plain upload ready', (x) => x.uploads.some((u) => u.provider === 'plain' && u.state === 'ready'), 60_000);
    await assert.rejects(readFile(seen('plain')), { code: 'ENOENT' });
  });

  it('fails the upload with the hook\'s words and deletes the image when the hook exits non-zero', async () => {
    const s = await sys.waitForState('bad upload failed', (x) => x.uploads.some((u) => u.provider === 'bad' && u.state === 'failed'), 60_000);
    const failed = s.uploads.find((u) => u.provider === 'bad' && u.state === 'failed')!;
    const reason = failed.reason ?? '';
    assert.match(reason, new RegExp(`^post-upload-hook ${hook} exited 3: `));
    // The hook's argv (the args file may already be a later retry's).
    const args = (await readFile(seen('bad'), 'utf8')).trim().split('\n');
    assert.deepEqual([args[0], args[1], args[4]], ['3', 'bad', 'file-exists']);
    const externalId = /checking image (\S+)/.exec(reason)?.[1] ?? '';
    assert.ok(externalId, `no image id in the reason: ${reason}`);
    assert.match(reason, new RegExp(`image ${externalId} has no sshd`));
    assert.match(reason, new RegExp(`the image ${externalId} was deleted`));
    const left = await sys.glanceImages({ nodepool_provider_name: 'bad' });
    assert.ok(!left.some((i) => i.externalId === externalId), `image ${externalId} still in Glance: ${JSON.stringify(left)}`);
  });

  it('keeps the builder serving: after the backoff the next upload job works once the hook passes', async () => {
    const builder = sys.builders.get('a')!.inProcess!;
    const workers = await adminWorkers({ host: '127.0.0.1', port: sys.gearmand.port });
    assert.ok(workers.some((w) => w.clientId === builder.clientId && w.functions.includes(fn.imageBuild('deb'))), 'builder still registered');
    await rm(failFlag('bad'));
    const s = await sys.waitForState('bad upload ready after the retry', (x) => x.uploads.some((u) => u.provider === 'bad' && u.state === 'ready'), 60_000);
    const ready = s.uploads.find((u) => u.provider === 'bad' && u.state === 'ready')!;
    assert.equal((await readFile(seen('bad'), 'utf8')).trim().split('\n')[2], ready.externalId);
    assert.deepEqual((await sys.glanceImages({ nodepool_provider_name: 'bad' })).map((i) => i.externalId), [ready.externalId]);
  });
});
