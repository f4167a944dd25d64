/**
 * Validating uploads and failed checks on the web status, read from a real SQLite store by a
 * real WebServer, and the dashboard drawn in headless Chromium: the validating row with its
 * state and age, a failed upload's multi-line reason kept as lines and put in as text (the
 * HTML in it is not parsed), and the target's attention line. The records are written to the
 * store directly, as the server's validator would leave them: this tests what is shown, not
 * the validator.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../../lib/lifecycle.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { WebServer } from '../../../server/web/web-server.js';
import { createBuilderEnv, fakeDiskimage, loopbackProvider, type BuilderEnv } from '../../support/builder-env.js';
import { testLogger } from '../../support/test-log.js';
import { HeadlessChromium } from './chromium.js';
import { get } from './web-helpers.js';

const REASON = 'validation: command "test -x /usr/sbin/sshd" exited 1 on node 0000000007; output tail:\n'
  + '<img src=x onerror="document.title=\'pwned\'"> <b>not bold</b>\nsecond line of the tail';

describe('web status: validating uploads and validation failures', () => {
  let env: BuilderEnv;
  let store: Store;
  let web: WebServer;
  let browser: HeadlessChromium | undefined;

  before(async () => {
    // A config the loader accepts, for the views that read one (gearmand is never called).
    env = await createBuilderEnv({ name: 'web-validation', gearmanPort: 1, diskimages: [fakeDiskimage('deb')], providers: [loopbackProvider('cloud-a', ['deb'])] });
    store = await openStore(env.config);
    const build = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    await store.updateBuild(build.id, { state: 'ready' });
    const failed = await store.createUpload({ buildId: build.id, provider: 'cloud-a', imageName: 'deb', externalName: 'deb-1' });
    await store.updateUpload(failed.id, { state: 'failed', reason: REASON });
    const validating = await store.createUpload({ buildId: build.id, provider: 'cloud-a', imageName: 'deb', externalName: 'deb-2' });
    await store.updateUpload(validating.id, { state: 'validating', externalId: 'img-validating-1', externalName: 'deb-2', format: 'qcow2' });
    web = await WebServer.start({
      host: '127.0.0.1', port: 0, log: testLogger(), cacheMs: 0,
      status: { store, config: () => env.config, clock: () => Date.now() },
      loops: () => [], started: () => true,
    });
  });

  after(async () => {
    await browser?.close();
    await web?.stop();
    await store?.close();
    await env?.remove();
  });

  it('/api/image-list shows the validating row and one line per failure; the JSON has the whole reason', async () => {
    const text = (await get(web.port, '/api/image-list')).body;
    assert.match(text, /\| deb-0000000001 \| 0000000002 \| cloud-a +\| deb +\| deb-2 +\| img-validating-1 +\| validating \| \d\d:\d\d:\d\d:\d\d \|/);
    assert.match(text, /^deb to cloud-a: validating upload 0000000002 of deb-0000000001 for \d\d:\d\d:\d\d:\d\d; last validation failed \d\d:\d\d:\d\d:\d\d ago \(upload 0000000001\)$/m);
    assert.match(text, /^upload 0000000001 of deb-0000000001 to cloud-a failed: validation: command "test -x \/usr\/sbin\/sshd" exited 1 on node 0000000007; output tail: \(\+2 lines\)$/m);
    assert.ok(!text.includes('second line of the tail'), 'the text list keeps the first line');
    const json = JSON.parse((await get(web.port, '/api/image-list.json')).body) as { uploads: Array<{ id: string; state: string; reason: string | null }> };
    assert.deepEqual(json.uploads.map((u) => [u.id, u.state, u.reason]), [['0000000001', 'failed', REASON], ['0000000002', 'validating', null]]);
  });

  it('the dashboard draws the validating row and the reason as text, line by line', async () => {
    browser = await HeadlessChromium.start();
    const tab = await browser.open(`http://127.0.0.1:${web.port}/`);
    const text = await waitFor(async () => {
      const t = await browser!.evaluate<string>(tab, 'document.body.innerText');
      return /validating/.test(t) ? t : undefined;
    }, { timeoutMs: 20_000, what: 'the validating upload on the dashboard', intervalMs: 200 });
    assert.match(text, /0000000002\tdeb-0000000001\tcloud-a\tvalidating\t\d\d:\d\d:\d\d:\d\d/);
    assert.match(text, /validating upload 0000000002 of deb-0000000001 for/);
    const reason = await browser.evaluate<string>(tab, "[...document.querySelectorAll('#uploads td.reason')].map((td) => td.textContent).join('|')");
    assert.equal(reason, `${REASON}|`, 'the whole reason in the failed row, none in the validating one');
    const injected = await browser.evaluate<number>(tab, "document.querySelectorAll('#uploads img, #uploads b, #upload-attention img').length");
    assert.equal(injected, 0, 'no element made from the reason');
    assert.notEqual(await browser.evaluate<string>(tab, 'document.title'), 'pwned');
    // pre-wrap: the reason's lines show as lines.
    const rendered = await browser.evaluate<string>(tab, "document.querySelector('#uploads td.reason').innerText");
    assert.deepEqual(rendered.split('\n').slice(1), ['<img src=x onerror="document.title=\'pwned\'"> <b>not bold</b>', 'second line of the tail']);
  });
});
