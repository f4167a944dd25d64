/**
 * The operator console end to end (issue 25, "What must show") in a real headless Chromium
 * (Debian's chromium, driven by playwright-core) against nodepool-server with `webapp.auth`,
 * nodepool-builder with the fake disk-image-create and its build log port, and the full
 * loopback cloud (real Nova with the fake virt driver, real Glance behind the fault proxy):
 * an operator signs in with a token, builds the diskimage from the images page and watches
 * the build's log lines and its upload's progress arrive on the build page without a reload,
 * pauses and unpauses the diskimage, revokes the newest build and sees the next launch boot the
 * previous one, and holds that node from the nodes page. Every step checks what the page shows
 * and what the store holds, the audit trail included. With NODEPOOL_SCREENSHOTS=1 each page
 * visited is written to docs/console/e2e-<step>.png.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { BuildRecord, NodeRecord, UploadRecord } from '../../../lib/store/models.js';
import { ConsoleE2eSystem } from '../../support/console-e2e-system.js';
import { runningProcesses, stopAllProcesses } from '../../support/processes.js';
import { DISKIMAGE } from '../rollout/rollout-env.js';

const SCREENSHOTS = process.env.NODEPOOL_SCREENSHOTS === '1';
const USER = 'e2e-operator';
/** The console redraws every 2 s and reads a log every 1 s; a build step takes well under this. */
const WAIT = { timeout: 60_000 };
const MIB = 1024 * 1024;

void describe('the operator console end to end in headless Chromium', () => {
  let sys: ConsoleE2eSystem | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let client: NodepoolClient;
  /** The build the system made at start, and its upload: what a launch boots once the newer build is revoked. */
  let first: { build: BuildRecord; upload: UploadRecord };
  /** The build made from the console, and its upload. */
  let second: { build: BuildRecord; upload: UploadRecord };
  let launched: NodeRecord;

  const s = (): ConsoleE2eSystem => sys as ConsoleE2eSystem;

  /** The ready upload of `build` (bounded wait). */
  const readyUploadOf = (build: BuildRecord): Promise<UploadRecord> => waitFor(async () =>
    (await s().store.listUploads({ buildId: build.id })).find((u) => u.buildId === build.id && u.state === 'ready'),
  // 300 s: a bound; in ci22 (the VM lane booting beside it) build 2's upload was not ready after 120 s.
  { timeoutMs: 300_000, what: `a ready upload of build ${build.id}`, intervalMs: 250 });

  /** Waits until the text of the element `selector` matches `re` (the page redraws itself every 2 s); returns that text. */
  function waitForText(selector: string, re: RegExp): Promise<string> {
    return waitFor(async () => {
      const text = await page.locator(selector).innerText(WAIT);
      return re.test(text) ? text : undefined;
    }, { timeoutMs: WAIT.timeout, what: `${selector} on ${page.url()} matching ${String(re)}`, intervalMs: 200 });
  }

  /** Clicks the button named `name` (in `scope` when given) and waits for the answer's message. */
  async function act(name: string, scope?: string): Promise<string> {
    await page.evaluate("document.getElementById('message').textContent = ''");
    const within = scope ? page.locator(scope) : page;
    await within.getByRole('button', { name, exact: true }).click();
    const message = await waitForText('#message', new RegExp(`^${name}: `));
    assert.equal(await page.locator('#message').getAttribute('class'), 'ok', message);
    return message;
  }

  async function screenshot(step: string): Promise<void> {
    if (SCREENSHOTS) await page.screenshot({ path: path.resolve('docs/console', `e2e-${step}.png`), fullPage: true });
  }

  /** The audit entries of {@link USER}, oldest first, as `action target result` (one an action, completed with its outcome). */
  async function audited(): Promise<string[]> {
    return (await s().store.listAudit({ limit: 100 })).filter((a) => a.user === USER).reverse().map((a) => `${a.action} ${a.target} ${a.result}`);
  }

  before(async () => {
    sys = await ConsoleE2eSystem.start({ dibPhaseDelayS: 0.4 });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    client = await sys.client();
    // The diskimage has no build yet: the server has the builder make one at start.
    const build = await waitFor(async () => (await s().store.listBuilds()).find((b) => b.diskimage === DISKIMAGE && b.state === 'ready'),
      { timeoutMs: 300_000, what: `a first ready build of ${DISKIMAGE}`, intervalMs: 250 });
    first = { build, upload: await readyUploadOf(build) };
  });

  after(async () => {
    await browser?.close();
    await sys?.stop();
    const left = runningProcesses().map((p) => p.name);
    await stopAllProcesses();
    assert.deepEqual(left, [], 'every process the test started has stopped');
  });

  it('signs in with an operator token: the buttons appear and the token stays in the tab', async () => {
    await page.goto(s().url('/images'));
    const buildNow = page.getByRole('button', { name: 'Build now' });
    assert.equal(await buildNow.isVisible(), false, 'no action buttons before signing in');
    assert.match(await page.locator('#image-0-builds').innerText(), new RegExp(`${first.build.id}\\tready\\t`));
    const token = await s().operatorToken(USER);
    await page.getByPlaceholder('paste a token to act').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitForText('#message', /^signed in/);
    assert.equal(await buildNow.isVisible(), true);
    assert.equal(await page.evaluate<string | null>("sessionStorage.getItem('nodepool-token')"), token);
    assert.ok(!(await page.content()).includes(token), 'the token is not in the page');
    assert.deepEqual(await audited(), [], 'signing in writes nothing');
    await screenshot('1-signed-in');
  });

  it('builds the diskimage from the console; its log lines and its upload progress appear on the build page without a reload', async () => {
    await s().pauseBuilds();
    s().holdUploads(4 * MIB);
    await act('Build now');
    const build = await waitFor(async () => (await s().store.listBuilds()).find((b) => b.diskimage === DISKIMAGE && b.id !== first.build.id),
      { timeoutMs: 30_000, what: 'the build the console asked for', intervalMs: 200 });
    assert.deepEqual(await audited(), [`image-build ${DISKIMAGE} ok`]);
    await waitForText('#image-0-builds', new RegExp(`${build.id}\\tbuilding`));
    await Promise.all([page.waitForURL(`**/builds/${build.id}`), page.getByRole('link', { name: build.id, exact: true }).click()]);
    await page.evaluate('window.marker = 42');

    // The fake disk-image-create waits after its install phase: the lines so far, no later ones.
    const early = await waitForText('#log', /dib-run-parts Target: install\.d/);
    assert.doesNotMatch(early, /post-install/);
    assert.match(await page.locator('#log-status').innerText(), /^following/);
    assert.match((await s().store.getBuild(build.id))?.logUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+\/build-logs\//, 'the build record says where its log is');
    await screenshot('2-build-log');
    await s().resumeBuilds();
    const later = await waitForText('#log', /dib-run-parts Target: cleanup\.d/);
    assert.ok(later.startsWith(early), 'the new lines were added to the ones shown');
    assert.match(later, /Target: post-install\.d[\s\S]*Target: finalise\.d/);

    // The upload's data is held at 4 MiB (plus what the sockets buffer) of 64 MiB.
    const uploading = await waitFor(async () => (await s().store.listUploads({ buildId: build.id }))
      .find((u) => u.buildId === build.id && u.state === 'uploading' && (u.progress?.numerator ?? 0) > 0), { timeoutMs: 60_000, what: 'upload progress in the store', intervalMs: 200 });
    assert.equal(uploading.progress?.denominator, 64 * MIB);
    const row = await waitForText('#uploads', new RegExp(`${uploading.id}\\t${s().provider}\\tuploading\\t.*MiB [1-9]\\d*%`));
    const percent = Number(/MiB (\d+)%/.exec(row)?.[1]);
    assert.ok(percent > 0 && percent < 100, `the page shows the upload part-way: ${row}`);
    assert.match(await page.locator('#uploads .bar > span').getAttribute('style') ?? '', /^width: ?\d+%;?$/);
    assert.equal(await page.evaluate<number>('window.marker'), 42, 'the page was not reloaded');
    await screenshot('2-build-uploading');

    s().releaseUploads();
    const upload = await readyUploadOf(build);
    await waitForText('#uploads', new RegExp(`${upload.id}\\t${s().provider}\\tready\\t`));
    await waitForText('#log-status', /^log complete/);
    assert.equal(await page.evaluate<number>('window.marker'), 42, 'the page was not reloaded');
    second = { build: (await s().store.getBuild(build.id)) as BuildRecord, upload };
    assert.equal(second.build.state, 'ready');
  });

  it('pauses and unpauses the diskimage from the images page', async () => {
    await page.goto(s().url('/images'));
    await act('Pause');
    const [pause] = await s().store.listPauses();
    assert.deepEqual([pause?.diskimage, pause?.provider], [DISKIMAGE, null]);
    await waitForText('#image-0-state', /builds paused since/);
    await page.getByRole('button', { name: 'Unpause', exact: true }).waitFor(WAIT);
    await screenshot('3-paused');
    await act('Unpause');
    assert.deepEqual(await s().store.listPauses(), []);
    await waitForText('#image-0-state', /^(?![\s\S]*builds paused)/);
    await page.getByRole('button', { name: 'Pause', exact: true }).waitFor(WAIT);
    assert.deepEqual((await audited()).slice(-2), [`image-pause ${DISKIMAGE} ok`, `image-unpause ${DISKIMAGE} ok`]);
  });

  it('revokes the newest build from its page; the next launch boots the previous build\'s upload', async () => {
    const before = await s().launch(client);
    assert.equal(before.node.image, second.upload.id, 'while nothing is revoked the newest upload boots');
    assert.equal(before.glanceImage, second.upload.externalId);
    await client.release(before.node.id);

    // Revoking makes the server build anew; the fake disk-image-create holds that build back.
    await s().pauseBuilds();
    await page.goto(s().url(`/builds/${second.build.id}`));
    page.once('dialog', (d) => void d.accept());
    await act('Revoke', '#build-actions');
    const [revocation] = await s().store.listRevocations();
    assert.deepEqual([revocation?.diskimage, revocation?.buildId], [DISKIMAGE, second.build.id]);
    await waitForText('#build', /Revoked\trevoked/);
    await page.getByRole('button', { name: 'Unrevoke', exact: true }).waitFor(WAIT);
    await screenshot('4-revoked');

    const after = await s().launch(client);
    assert.equal(after.node.image, first.upload.id, `the next launch boots the previous build ${first.build.id}`);
    assert.equal(after.glanceImage, first.upload.externalId, 'its Nova server runs the previous build\'s Glance image');
    launched = after.node;
    assert.equal((await audited()).at(-1), `image-revoke ${second.build.id} ok`);
  });

  it('holds a node from the nodes page', async () => {
    await page.goto(s().url('/nodes'));
    const row = `#nodes tr:has(> td:first-child:text-is("${launched.id}"))`;
    assert.match(await page.locator(row).innerText(), /\tin-use\t/);
    await act('Hold', row);
    assert.equal((await s().store.getNode(launched.id))?.state, 'hold');
    await waitForText(row, /\thold\t/);
    await page.locator(row).getByRole('button', { name: 'Release', exact: true }).waitFor(WAIT);
    assert.equal((await audited()).at(-1), `hold ${launched.id} ok`);
    await screenshot('5-node-held');
    await page.goto(s().url('/'));
    await waitForText('#audit', new RegExp(`${USER}\\toperator\\thold\\t${launched.id}\\tok`));
    await screenshot('6-overview-audit');
  });
});
