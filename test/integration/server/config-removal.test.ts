import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { waitFor } from '../../../lib/lifecycle.js';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';

const diskimages = [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.1' })];
const providers = [loopbackProvider('cloud-a', ['deb'])];

type State = Awaited<ReturnType<ImageSystem['waitForState']>>;
/** Ids and states of every record, to compare two moments. */
const summary = (s: State): string[] => [...s.builds.map((b) => `${b.id} ${b.state}`), ...s.uploads.map((u) => `${u.id} ${u.provider} ${u.state} ${u.externalId}`)];

describe('config removals do not destroy at once', () => {
  let sys: ImageSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it('a running server refuses a truncated nodepool.yaml on reload and keeps every image', async () => {
    sys = await ImageSystem.start({ diskimages, providers });
    await sys.addBuilder('a');
    const server = sys.startServerProcess();
    const ready = await sys.waitForState('build and upload ready', (x) => x.builds.some((b) => b.state === 'ready') && x.uploads.some((u) => u.state === 'ready'));
    const good = await readFile(sys.serverConfigPath, 'utf8');
    await writeFile(sys.serverConfigPath, '');
    const log = path.join(sys.dir, 'server.log');
    await waitFor(async () => (await readFile(log, 'utf8')).includes('config reload failed'), { timeoutMs: 20_000, what: 'the server to refuse the empty file' });
    const text = await readFile(log, 'utf8');
    assert.match(text, /the document is empty/);
    await writeFile(sys.serverConfigPath, good);
    await waitFor(async () => (await readFile(log, 'utf8')).includes('config reloaded'), { timeoutMs: 20_000, what: 'the restored file to be reloaded' });
    const now = await sys.waitForState('records settled', (x) => x.uploads.every((u) => u.state === 'ready'));
    assert.deepEqual(summary(now), summary(ready), 'no record changed');
    assert.ok(server.alive(), 'the server is still running');
  });

  it('a provider that stops listing a diskimage keeps its upload for the grace period, a restored config cancels, and the deletion happens after the grace', async () => {
    sys = await ImageSystem.start({ diskimages, providers, lifecycle: { 'config-removal-grace': 5 } });
    await sys.addBuilder('a');
    await sys.startServer();
    const ready = await sys.waitForState('build and upload ready', (x) => x.builds.some((b) => b.state === 'ready') && x.uploads.some((u) => u.state === 'ready'));

    await sys.reconfigure({ providers: [loopbackProvider('cloud-a', [])] });
    await sys.passes(3);
    assert.deepEqual(summary(await sys.waitForState('records', () => true)), summary(ready), 'nothing deleted within the grace period');
    await sys.reconfigure({ providers });
    await sys.passes(8);
    assert.deepEqual(summary(await sys.waitForState('records', () => true)), summary(ready), 'nothing deleted once the config is back, past the first grace period');

    await sys.reconfigure({ providers: [loopbackProvider('cloud-a', [])] });
    const started = Date.now();
    await sys.waitForState('the upload deleted after the grace period', (x) => x.uploads.length === 0, 30_000);
    assert.ok(Date.now() - started >= 4000, `deleted after ${Date.now() - started} ms, not before the 5 s grace`);
    const system = sys;
    await waitFor(async () => (await system.glanceImages({ nodepool_image_name: 'deb' })).length === 0, { timeoutMs: 20_000, what: 'the Glance image deleted' });
  });
});
