/**
 * The cloud HTTP client against a real HTTP server on 127.0.0.1 (test/support/scripted-cloud.ts):
 * keep-alive (Nova polls share one connection), one retry of a GET after a reset or a 5xx
 * and none of a POST, the body limit, a body cut short, the idle timeout and abort.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HttpClient } from '../../../../lib/drivers/openstack/http-client.js';
import { KeystoneSession } from '../../../../lib/drivers/openstack/keystone.js';
import { NovaClient } from '../../../../lib/drivers/openstack/nova.js';
import { CloudError } from '../../../../lib/errors.js';
import { ScriptedCloud } from '../../../support/scripted-cloud.js';

const SERVER = { server: { id: 's1', name: 'n', status: 'BUILD', metadata: {}, addresses: {} } };

describe('cloud HTTP client', () => {
  let cloud: ScriptedCloud;
  const clients: HttpClient[] = [];
  const client = (o: ConstructorParameters<typeof HttpClient>[0] = {}): HttpClient => {
    const c = new HttpClient({ retryDelayMs: 10, ...o });
    clients.push(c);
    return c;
  };

  before(async () => {
    cloud = await ScriptedCloud.start();
  });

  afterEach(() => {
    for (const c of clients.splice(0)) c.close();
  });

  after(async () => {
    await cloud.stop();
  });

  it('polls Nova 50 times over one TCP connection (authentication included)', async () => {
    cloud.answer('GET', /^\/v2\.1\/servers\/s1$/, { body: SERVER });
    const before = cloud.connections;
    const session = await KeystoneSession.authenticate(cloud.creds());
    try {
      const nova = new NovaClient(session);
      for (let i = 0; i < 50; i++) assert.equal((await nova.getServer('s1'))?.status, 'BUILD');
      assert.equal(cloud.connections - before, 1, 'connections the server accepted for 1 auth + 50 polls');
      assert.deepEqual(session.http.stats, { connectionsOpened: 1, requests: 51, retries: 0 });
    } finally {
      session.close();
    }
  });

  it('retries a GET once after a connection reset', async () => {
    cloud.answer('GET', /^\/reset-once$/, [{ reset: true }, { body: { ok: true } }]);
    const c = client();
    const res = await c.request(`${cloud.url}/reset-once`, { method: 'GET', service: 'Nova' });
    assert.equal(res.status, 200);
    assert.equal(cloud.seen('GET', /^\/reset-once$/).length, 2);
    assert.equal(c.stats.retries, 1);
  });

  it('gives up on a GET reset twice, with a CloudError naming the URL', async () => {
    cloud.answer('GET', /^\/reset-always$/, { reset: true });
    await assert.rejects(client().request(`${cloud.url}/reset-always`, { method: 'GET', service: 'Nova' }), (err: unknown) => {
      assert.ok(err instanceof CloudError, String(err));
      assert.match(err.message, new RegExp(`^Nova GET ${cloud.url}/reset-always failed: (socket hang up|read ECONNRESET)$`));
      return true;
    });
    assert.equal(cloud.seen('GET', /^\/reset-always$/).length, 2);
  });

  it('retries a GET once after a 5xx answer, then reports the second answer', async () => {
    cloud.answer('GET', /^\/flaky$/, [{ status: 503, body: 'busy' }, { body: { ok: true } }]);
    cloud.answer('GET', /^\/down$/, { status: 502, body: '<html><body><h1>502 Bad Gateway</h1></body></html>', headers: { 'Content-Type': 'text/html' } });
    const c = client();
    assert.equal((await c.request(`${cloud.url}/flaky`, { method: 'GET' })).status, 200);
    assert.equal(cloud.seen('GET', /^\/flaky$/).length, 2);
    assert.equal((await c.request(`${cloud.url}/down`, { method: 'GET' })).status, 502);
    assert.equal(cloud.seen('GET', /^\/down$/).length, 2);
  });

  it('never retries a POST, after a reset or a 5xx', async () => {
    cloud.answer('POST', /^\/post-reset$/, [{ reset: true }, { body: { ok: true } }]);
    cloud.answer('POST', /^\/post-503$/, [{ status: 503, body: 'busy' }, { body: { ok: true } }]);
    const c = client();
    await assert.rejects(c.request(`${cloud.url}/post-reset`, { method: 'POST', body: '{}' }), CloudError);
    assert.equal(cloud.seen('POST', /^\/post-reset$/).length, 1);
    assert.equal((await c.request(`${cloud.url}/post-503`, { method: 'POST', body: '{}' })).status, 503);
    assert.equal(cloud.seen('POST', /^\/post-503$/).length, 1);
    assert.equal(c.stats.retries, 0);
  });

  it('refuses an answer larger than the body limit, announced or not', async () => {
    const big = 'x'.repeat(5000);
    cloud.answer('GET', /^\/big-announced$/, { body: big, headers: { 'Content-Length': big.length } });
    cloud.answer('GET', /^\/big-chunked$/, { body: big, headers: { 'Transfer-Encoding': 'chunked' } });
    const c = client({ maxBodyBytes: 1024 });
    await assert.rejects(c.request(`${cloud.url}/big-announced`, { method: 'GET', service: 'Glance' }), (err: unknown) =>
      err instanceof CloudError && err.message === 'Glance GET /big-announced: answer 200 announces 5000 bytes, more than the limit of 1024');
    await assert.rejects(c.request(`${cloud.url}/big-chunked`, { method: 'GET', service: 'Glance' }), (err: unknown) =>
      err instanceof CloudError && err.message === 'Glance GET /big-chunked: answer 200 is larger than the limit of 1024 bytes');
    assert.equal(cloud.seen('GET', /^\/big-/).length, 2, 'an oversized answer is not retried');
  });

  it('reports a body cut short as an error, after one retry of a GET', async () => {
    cloud.answer('GET', /^\/cut$/, { truncate: { length: 100, sent: 10 } });
    await assert.rejects(client().request(`${cloud.url}/cut`, { method: 'GET', service: 'Glance' }), (err: unknown) =>
      err instanceof CloudError && new RegExp(`^Glance GET ${cloud.url}/cut failed: `).test(err.message));
    assert.equal(cloud.seen('GET', /^\/cut$/).length, 2);
  });

  it('times out a silent server and cancels on abort', async () => {
    cloud.answer('GET', /^\/slow$/, { hang: true });
    const c = client({ timeoutMs: 200 });
    await assert.rejects(c.request(`${cloud.url}/slow`, { method: 'GET', service: 'Glance' }), (err: unknown) =>
      err instanceof CloudError && err.message === `Glance GET ${cloud.url}/slow: no answer within 200 ms`);
    const abort = new AbortController();
    const t0 = Date.now();
    setTimeout(() => abort.abort(new Error('caller gave up')), 100);
    await assert.rejects(client().request(`${cloud.url}/slow`, { method: 'GET', service: 'Glance', signal: abort.signal }), (err: unknown) =>
      err instanceof CloudError && err.message === 'Glance GET /slow aborted' && (err.cause as Error).message === 'caller gave up');
    assert.ok(Date.now() - t0 < 2000);
  });
});
