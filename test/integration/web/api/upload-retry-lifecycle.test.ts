/**
 * `POST /api/upload/<id>/retry` through a running image lifecycle (real gearmand, builder,
 * loopback Glance, nodepool-server in this process, SQLite): uploads to a provider whose cloud
 * does not exist fail, and with a 10-minute retry delay the next attempt waits; a retry request
 * through the API starts the next upload at once, and the server clears the request once it
 * has started; the next failure is held back by the backoff again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../../lib/config/load.js';
import { LIFECYCLE_STATUS_KEY, type UploadTargetStatus } from '../../../../lib/status/lifecycle-status.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import { loadAuthenticators } from '../../../../lib/web-auth/authenticators.js';
import { signToken } from '../../../../lib/web-auth/sign-token.js';
import { apiModule } from '../../../../server/web/api/api-module.js';
import type { WebContext } from '../../../../server/web/web-context.js';
import { WebServer } from '../../../../server/web/web-server.js';
import { fakeDiskimage, loopbackProvider, type RawProvider } from '../../../support/builder-env.js';
import { ImageSystem } from '../../../support/image-system.js';
import { runningProcesses } from '../../../support/processes.js';
import { testLogger } from '../../../support/test-log.js';
import { LOCAL } from './api-env.js';

const broken: RawProvider = { ...loopbackProvider('broken', ['deb']), cloud: 'no-such-cloud' };

describe('upload retry through the image lifecycle', () => {
  let sys: ImageSystem;
  let web: WebServer | undefined;

  before(async () => {
    sys = await ImageSystem.start({
      diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.1' })],
      providers: [broken],
      lifecycle: { 'retry-delay': 600, 'max-retry-delay': 600 },
    });
    await sys.addBuilder('a', { diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.1' })] });
    await sys.startServer();
  });
  after(async () => {
    await web?.stop();
    await sys?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  /** Waits for a lifecycle pass after `since` whose status holds the broken target back for minutes. */
  const backoffHolds = async (since: number, failures: number): Promise<void> => {
    await waitFor(async () => {
      const st = await sys.store.getStatus<{ targets: UploadTargetStatus[] }>(LIFECYCLE_STATUS_KEY);
      const t = st && st.updated > since ? st.value.targets.find((x) => x.provider === 'broken') : undefined;
      return t !== undefined && t.failures === failures && (t.retryAt ?? 0) > Date.now() + 60_000;
    }, { timeoutMs: 30_000, what: `a lifecycle pass holding the broken target back after ${failures} failure(s)`, intervalMs: 100 });
  };

  it('starts the next upload at once instead of after the backoff, and clears the request', async () => {
    const failedUploads = async (): Promise<string[]> => (await sys.store.listUploads({ provider: 'broken', states: ['failed'] })).map((u) => u.id);
    const [first] = await waitFor(async () => { const f = await failedUploads(); return f.length > 0 ? f : undefined; },
      { timeoutMs: 90_000, what: 'a failed upload to the broken provider', intervalMs: 200 });
    assert.ok(first);
    const firstFailed = (await sys.store.getUpload(first))?.stateTime ?? 0;
    await backoffHolds(firstFailed, 1);
    assert.deepEqual(await failedUploads(), [first], 'no second attempt within the backoff');

    const config = loadConfig(sys.serverConfigPath);
    const log = testLogger();
    const ctx: WebContext = {
      store: sys.store, config: () => config, auth: await loadAuthenticators([LOCAL]),
      status: { store: sys.store, config: () => config, clock: Date.now }, loops: () => [], started: () => true, clock: Date.now, log,
    };
    web = await WebServer.start({ host: '127.0.0.1', port: 0, log, status: ctx.status, loops: ctx.loops, started: ctx.started, routes: apiModule(ctx).routes });
    const res = await fetch(`http://127.0.0.1:${web.port}/api/upload/${first}/retry`, {
      method: 'POST', headers: { Authorization: `Bearer ${await signToken(LOCAL, { user: 'alice', role: 'operator', expiresInS: 600 })}`, 'Content-Type': 'application/json', Connection: 'close' },
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200, await res.text());
    const asked = Date.now();
    const second = await waitFor(async () => (await sys.store.listUploads({ provider: 'broken' })).find((u) => u.id !== first),
      { timeoutMs: 30_000, what: 'the next upload to the broken provider', intervalMs: 100 });
    assert.ok(second.created - asked < 30_000);
    await waitFor(async () => (await sys.store.listUploadRetries()).length === 0, { timeoutMs: 10_000, what: 'the retry request cleared', intervalMs: 100 });
    // It fails again, and the backoff holds again (the request was spent): no third attempt.
    await waitFor(async () => (await failedUploads()).length === 2, { timeoutMs: 30_000, what: 'the retried upload failed', intervalMs: 200 });
    await backoffHolds((await sys.store.getUpload(second.id))?.stateTime ?? 0, 2);
    assert.equal((await sys.store.listUploads({ provider: 'broken' })).length, 2);
  });
});
