/**
 * Build log tokens on the builder (issue 31 §9), pure parts and the token file: the build
 * payload's `log-token` (bounded base64url, never quoted when refused), the Bearer comparison,
 * and the token kept beside the log and pruned with it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { InvalidJobError } from '../../../lib/errors.js';
import { newLogToken } from '../../../lib/http/build-log-protocol.js';
import { BuildLog } from '../../../workers/builder/build-log.js';
import { parseBuildPayload } from '../../../workers/builder/job-payloads.js';
import { bearerMatches, readLogToken } from '../../../workers/builder/log-token.js';

const known = new Set(['deb']);
const payload = (o: Record<string, unknown>): Buffer => Buffer.from(JSON.stringify({ 'image-id': 'deb-0000000001', ...o }));

describe('builder: build log tokens', () => {
  it('takes a build payload\'s log-token of 32-128 base64url characters, and none', () => {
    const token = newLogToken();
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(parseBuildPayload(payload({ 'log-token': token }), 'deb', known).logToken, token);
    assert.equal('logToken' in parseBuildPayload(payload({}), 'deb', known), false);
    assert.equal('logToken' in parseBuildPayload(payload({ 'log-token': null }), 'deb', known), false);
  });

  it('refuses a malformed log-token without quoting it', () => {
    for (const bad of ['short-but-secret', 'x'.repeat(129), `${'a'.repeat(40)}+/=`, `${'a'.repeat(40)}\n`, 12345, ['a'.repeat(43)]]) {
      assert.throws(() => parseBuildPayload(payload({ 'log-token': bad }), 'deb', known), (err: Error) => {
        assert.ok(err instanceof InvalidJobError, String(err));
        assert.equal(err.message.includes(String(bad).slice(0, 10)), false, err.message);
        return true;
      });
    }
  });

  it('matches only "Bearer <the token>"', () => {
    const token = newLogToken();
    assert.equal(bearerMatches(token, `Bearer ${token}`), true);
    assert.equal(bearerMatches(token, `bearer ${token}`), true);
    for (const other of [undefined, '', token, `Basic ${token}`, `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, `Bearer ${newLogToken()}`, 'Bearer ']) {
      assert.equal(bearerMatches(token, other), false, String(other));
    }
  });

  it('keeps the token beside the log (mode 0600), removes a stale one for a build without a token, and prunes tokens with their logs', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'log-token-'));
    try {
      const token = newLogToken();
      await (await BuildLog.open(dir, 'deb-0000000001', 'deb', 2, token)).close();
      assert.equal(await readLogToken(dir, 'deb-0000000001'), token);
      assert.equal((await stat(path.join(dir, 'deb-0000000001.token'))).mode & 0o777, 0o600);
      await (await BuildLog.open(dir, 'deb-0000000001', 'deb', 2, undefined)).close();
      assert.equal(await readLogToken(dir, 'deb-0000000001'), undefined, 'a retry without a token leaves none behind');
      await (await BuildLog.open(dir, 'deb-0000000002', 'deb', 2, newLogToken())).close();
      await (await BuildLog.open(dir, 'deb-0000000003', 'deb', 2, newLogToken())).close();
      assert.deepEqual((await readdir(dir)).sort(), ['deb-0000000002.log', 'deb-0000000002.token', 'deb-0000000003.log', 'deb-0000000003.token']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
