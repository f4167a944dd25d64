/**
 * Keystone and Glance answering garbage from a real HTTP server on 127.0.0.1: every answer
 * that is not JSON, not an object, or has a field missing or of the wrong type becomes a
 * CloudError naming the call and the field, with the cloud's words — never a TypeError.
 * A Glance upload failing that way is an expected failure (WORK_FAIL) on the builder.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GlanceClient } from '../../../../lib/drivers/openstack/glance.js';
import { OpenStackImageService } from '../../../../lib/drivers/openstack/glance-image-service.js';
import { KeystoneSession } from '../../../../lib/drivers/openstack/keystone.js';
import { CloudError } from '../../../../lib/errors.js';
import { silentLogger } from '../../../../lib/log.js';
import { reportOutcome } from '../../../../workers/builder/outcome.js';
import { ScriptedCloud, type ScriptedAnswer } from '../../../support/scripted-cloud.js';

const HTML_503 = '<html><head><title>503 Service Unavailable</title></head><body><h1>Service Unavailable</h1>'
  + '<p>The server is temporarily unable to service your request.</p></body></html>';

/** Asserts a rejection with a CloudError whose message is exactly `message` (or matches it). */
async function rejectsWith(p: Promise<unknown>, message: string | RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof CloudError, `expected a CloudError, got ${String((err as Error).stack)}`);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

describe('Keystone answering garbage', () => {
  let cloud: ScriptedCloud;
  const auth = (a: ScriptedAnswer): Promise<KeystoneSession> => {
    cloud.answer('POST', /^\/v3\/auth\/tokens$/, a);
    return KeystoneSession.authenticate(cloud.creds(), { http: { retryDelayMs: 1 } });
  };
  /** A token answer with `patch` applied to its `token` object. */
  const token = (patch: (t: Record<string, unknown>) => void, headers = true): ScriptedAnswer => {
    const good = cloud.tokenAnswer() as { status: number; headers: Record<string, string>; body: { token: Record<string, unknown> } };
    patch(good.body.token);
    return { status: 201, headers: headers ? good.headers : {}, body: good.body };
  };

  beforeEach(async () => {
    cloud = await ScriptedCloud.start();
  });

  afterEach(async () => {
    await cloud.stop();
  });

  it('authenticates against a well-formed answer', async () => {
    const s = await KeystoneSession.authenticate(cloud.creds());
    assert.equal(s.projectId, 'p1');
    assert.equal(s.endpoint('compute'), `${cloud.url}/v2.1`);
    s.close();
  });

  it('names an HTML page answered with 201', async () => {
    await rejectsWith(auth({ status: 201, body: HTML_503, headers: { 'Content-Type': 'text/html' } }),
      'Keystone POST /v3/auth/tokens: answer 201 is not JSON; cloud said: 503 Service Unavailable Service Unavailable '
      + 'The server is temporarily unable to service your request.');
  });

  it('names a JSON answer that is not an object', async () => {
    await rejectsWith(auth({ status: 201, body: '[1,2]', headers: { 'X-Subject-Token': 't' } }),
      'Keystone POST /v3/auth/tokens: answer 201 is array, not a JSON object; cloud said: [1,2]');
  });

  it('names a missing X-Subject-Token header', async () => {
    await rejectsWith(auth(token(() => {}, false)), 'Keystone POST /v3/auth/tokens: header "X-Subject-Token": expected a token, got none');
  });

  it('names a missing or unreadable expiry', async () => {
    await rejectsWith(auth(token((t) => delete t.expires_at)),
      /^Keystone POST \/v3\/auth\/tokens: field "token\.expires_at": expected string, got undefined; cloud said: \{"token":\{"issued_at":/);
    await rejectsWith(auth(token((t) => (t.expires_at = 'soon'))),
      /^Keystone POST \/v3\/auth\/tokens: field "token\.expires_at": expected an ISO 8601 time, got string "soon"; cloud said: /);
    await rejectsWith(auth({ status: 201, body: { tokens: {} }, headers: { 'X-Subject-Token': 't' } }),
      'Keystone POST /v3/auth/tokens: field "token": expected object, got undefined; cloud said: {"tokens":{}}');
  });

  it('names a malformed catalog down to the endpoint field', async () => {
    await rejectsWith(auth(token((t) => (t.catalog = { image: 'http://x' }))),
      /^Keystone POST \/v3\/auth\/tokens: field "token\.catalog": expected array, got object; /);
    await rejectsWith(auth(token((t) => ((t.catalog as Array<{ endpoints: Array<Record<string, unknown>> }>)[1] as { endpoints: Array<Record<string, unknown>> }).endpoints[0] = { url: 5, interface: 'public' })),
      /^Keystone POST \/v3\/auth\/tokens: field "token\.catalog\[1\]\.endpoints\[0\]\.url": expected string, got number 5; /);
    await rejectsWith(auth(token((t) => (t.project = { id: '' }))),
      /^Keystone POST \/v3\/auth\/tokens: field "token\.project\.id": expected a non-empty string id, got string ""; /);
  });

  it('passes on the words of a 500 (an auth POST is not retried)', async () => {
    await rejectsWith(auth({ status: 500, body: HTML_503, headers: { 'Content-Type': 'text/html' } }),
      `Keystone authentication failed for user 'demo' in project 'demo' at ${cloud.url}/v3/auth/tokens: 500; cloud said: Service Unavailable`);
    assert.equal(cloud.seen('POST', /^\/v3\/auth\/tokens$/).length, 1);
  });
});

describe('Glance answering garbage', () => {
  let cloud: ScriptedCloud;
  let session: KeystoneSession;
  let glance: GlanceClient;
  let tmp: string;
  let file: string;

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'nodepool-glance-garbage-'));
    file = path.join(tmp, 'img.qcow2');
    await writeFile(file, Buffer.alloc(4096, 1));
  });

  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  beforeEach(async () => {
    cloud = await ScriptedCloud.start();
    session = await KeystoneSession.authenticate(cloud.creds(), { http: { retryDelayMs: 1 } });
    glance = new GlanceClient(session, { pollIntervalMs: 10 });
    cloud.answer('DELETE', /^\/v2\/images\/[^/]+$/, { status: 204 });
  });

  afterEach(async () => {
    session.close();
    await cloud.stop();
  });

  const upload = (): ReturnType<GlanceClient['uploadImage']> =>
    glance.uploadImage({ name: 'deb-0000000001', diskFormat: 'qcow2', filePath: file, properties: { nodepool_build_id: '0000000001' } });

  it('names a create answer without an image id', async () => {
    cloud.answer('POST', /^\/v2\/images$/, { status: 201, body: { name: 'deb-0000000001', status: 'queued' } });
    await rejectsWith(upload(), 'Glance POST /v2/images: field "id": expected a non-empty string id, got undefined; '
      + 'cloud said: {"name":"deb-0000000001","status":"queued"}');
    cloud.answer('POST', /^\/v2\/images$/, { status: 201, body: 'Created' });
    await rejectsWith(upload(), 'Glance POST /v2/images: answer 201 is not JSON; cloud said: Created');
  });

  it('names a file upload refused with an HTML page, and deletes the image', async () => {
    cloud.answer('POST', /^\/v2\/images$/, { status: 201, body: { id: 'i1', status: 'queued' } });
    cloud.answer('PUT', /^\/v2\/images\/i1\/file$/, { status: 500, body: HTML_503, headers: { 'Content-Type': 'text/html' } });
    await rejectsWith(upload(), 'Glance PUT /v2/images/i1/file failed with 500; cloud said: Service Unavailable');
    assert.equal(cloud.seen('DELETE', /^\/v2\/images\/i1$/).length, 1, 'the created image is deleted');
  });

  it('names a status poll answering a wrong type, and deletes the image', async () => {
    cloud.answer('POST', /^\/v2\/images$/, { status: 201, body: { id: 'i1', status: 'queued' } });
    cloud.answer('PUT', /^\/v2\/images\/i1\/file$/, { status: 204 });
    cloud.answer('GET', /^\/v2\/images\/i1$/, { body: { id: 'i1', status: 5 } });
    await rejectsWith(upload(), 'Glance GET /v2/images/i1: field "status": expected string, got number 5; cloud said: {"id":"i1","status":5}');
    assert.equal(cloud.seen('DELETE', /^\/v2\/images\/i1$/).length, 1);
  });

  it('makes a garbage answer during an upload an expected failure (WORK_FAIL) on the builder', async () => {
    cloud.answer('POST', /^\/v2\/images$/, { status: 201, body: { id: 'i1', status: 'queued' } });
    cloud.answer('PUT', /^\/v2\/images\/i1\/file$/, { status: 204 });
    cloud.answer('GET', /^\/v2\/images\/i1$/, { body: { id: 'i1', status: 'active', size: '4096' } });
    const svc = await OpenStackImageService.create(cloud.creds(), silentLogger(), { glance: { pollIntervalMs: 10 } });
    try {
      const outcome = await reportOutcome(silentLogger(), () => svc.upload({ name: 'deb-0000000001', format: 'qcow2', filePath: file, properties: {} }));
      assert.deepEqual(outcome, {
        type: 'fail',
        message: 'Glance GET /v2/images/i1: field "size": expected number, got string "4096"; cloud said: {"id":"i1","status":"active","size":"4096"}',
      });
    } finally {
      svc.close();
    }
  });

  it('names a get answer for another image, or a body that is not an object', async () => {
    cloud.answer('GET', /^\/v2\/images\/i1$/, { body: { id: 'i2', status: 'active' } });
    await rejectsWith(glance.getImage('i1'), /^Glance GET \/v2\/images\/i1: field "id": expected "i1", got string "i2"; /);
    cloud.answer('GET', /^\/v2\/images\/i1$/, { body: 'null' });
    await rejectsWith(glance.getImage('i1'), 'Glance GET /v2/images/i1: answer 200 is null, not a JSON object; cloud said: null');
  });

  it('names malformed list pages down to the image', async () => {
    cloud.answer('GET', /^\/v2\/images$/, { body: { images: {} } });
    await rejectsWith(glance.listImages(), 'Glance GET /v2/images: field "images": expected array, got object; cloud said: {"images":{}}');
    cloud.answer('GET', /^\/v2\/images$/, { body: { images: [{ id: 'a', status: 'active' }, { name: 'b', status: 'active' }] } });
    await rejectsWith(glance.listImages(), /^Glance GET \/v2\/images: field "images\[1\]\.id": expected a non-empty string id, got undefined; /);
    cloud.answer('GET', /^\/v2\/images$/, { body: { images: [], next: 7 } });
    await rejectsWith(glance.listImages(), /^Glance GET \/v2\/images: field "next": expected string, got number 7; /);
    cloud.answer('GET', /^\/v2\/images$/, { status: 200, body: HTML_503, headers: { 'Content-Type': 'text/html' } });
    await rejectsWith(glance.listImages(), /^Glance GET \/v2\/images: answer 200 is not JSON; cloud said: 503 Service Unavailable /);
  });

  it('passes on the words of a failed delete (not retried)', async () => {
    cloud.answer('DELETE', /^\/v2\/images\/i1$/, { status: 500, body: { error: { message: 'store unavailable' } } });
    await rejectsWith(glance.deleteImage('i1'), 'Glance DELETE /v2/images/i1 failed with 500; cloud said: store unavailable');
    assert.equal(cloud.seen('DELETE', /^\/v2\/images\/i1$/).length, 1);
  });

  it('cancels a listing when the caller aborts', async () => {
    cloud.answer('GET', /^\/v2\/images$/, { hang: true });
    const svc = await OpenStackImageService.create(cloud.creds());
    try {
      const abort = new AbortController();
      setTimeout(() => abort.abort(new Error('timed out')), 50);
      await rejectsWith(svc.list({}, abort.signal), 'Glance GET /v2/images aborted');
    } finally {
      svc.close();
    }
  });
});
