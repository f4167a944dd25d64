/**
 * nodepool-server's start with `webapp.auth` (server/main.ts): an authenticator whose key file
 * cannot be used fails the start with a ConfigError naming the file and its key (nothing left
 * running); with a local HS256 authenticator the server's own web port takes an operator's
 * write, and after a reload with a rotated secret refuses the old token and takes the new one;
 * without `webapp.auth` the same write answers 403 and says why.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../../lib/config/load.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { ConfigError } from '../../../lib/errors.js';
import { signToken } from '../../../lib/web-auth/sign-token.js';
import { NodepoolServer } from '../../../server/main.js';
import { testImageServices } from '../../support/image-services.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { freePort } from '../../support/processes.js';
import { testLogger } from '../../support/test-log.js';
import { call } from './web-helpers.js';

const SECRET = 'web-auth-start-test-secret-0123456789abcdef';
const LOCAL = { name: 'local', driver: 'HS256', secret: SECRET, issuer: 'nodepool', audience: 'nodepool' };

void describe('nodepool-server start with webapp.auth', () => {
  const systems: LauncherSystem[] = [];
  const servers: NodepoolServer[] = [];
  after(async () => {
    for (const s of servers) await s.stop();
    for (const s of systems) await s.stop();
  });

  /** A launcher-only server on SQLite with a diskimage `deb`, serving its webapp (`auth` as given) on a free port. */
  async function start(auth: unknown[] | undefined, before?: (dir: string) => Promise<void>): Promise<{ port: number; sys: LauncherSystem; server: () => Promise<NodepoolServer> }> {
    const port = await freePort();
    const sys = await LauncherSystem.create({
      labels: [{ name: 'small' }], providers: [],
      extra: { diskimages: [{ name: 'deb' }], webapp: { port, 'listen-address': '127.0.0.1', ...(auth ? { auth } : {}) } },
    });
    systems.push(sys);
    await before?.(sys.dir);
    const server = async (): Promise<NodepoolServer> => {
      const config = loadConfig(sys.configPath);
      const log = testLogger();
      const s = await NodepoolServer.create({ config, log, hostname: 'auth-start', webapp: true, imageServices: testImageServices(() => config.cloudsFile, log) });
      servers.push(s);
      return s;
    };
    return { port, sys, server };
  }

  void it('fails the start with a ConfigError naming an unusable key file, and leaves its port free', async () => {
    const bad = { name: 'sso', driver: 'RS256', 'public-key': 'sso.pem', issuer: 'https://sso.example.org', audience: 'nodepool' };
    const { port, server } = await start([LOCAL, bad], (dir) => writeFile(path.join(dir, 'sso.pem'), 'not a PEM key\n'));
    const err = await server().then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ConfigError, `a ConfigError, got ${String(err)}`);
    assert.match(err.message, /webapp\.auth\[1\]\.public-key/);
    assert.match(err.message, /sso\.pem/);
    assert.ok(!err.message.includes(SECRET));
    await assert.rejects(call(port, '/health/live'), 'nothing listens on the web port');
  });

  void it("takes an operator's write on the server's own web port", async () => {
    const { port, sys, server } = await start([LOCAL]);
    const s = await server();
    const auth = loadConfig(sys.configPath).webapp.auth[0];
    assert.ok(auth);
    const token = await signToken(auth, { user: 'alice', role: 'operator', expiresInS: 60 });
    const got = await call(port, '/api/image/deb/pause', {
      method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ reason: 'start test' }),
    });
    assert.equal(got.status, 200, got.body);
    assert.deepEqual((await s.store.listPauses()).map((p) => [p.diskimage, p.provider, p.reason]), [['deb', null, 'start test']]);
    const [entry] = (await s.store.listAudit()).slice(0, 1);
    assert.deepEqual([entry?.user, entry?.action, entry?.result], ['alice', 'image-pause', 'ok']);
  });

  void it('takes a rotated secret on reload: the old token is refused, the new one taken', async () => {
    const { port, sys, server } = await start([LOCAL]);
    const s = await server();
    const pause = (token: string) => call(port, '/api/image/deb/pause', {
      method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ reason: 'reload test' }),
    });
    const oldToken = await signToken(loadConfig(sys.configPath).webapp.auth[0]!, { user: 'alice', role: 'operator', expiresInS: 60 });
    assert.equal((await pause(oldToken)).status, 200);
    const ROTATED = `${SECRET}-rotated`;
    const reload = async (auth: unknown[]): Promise<void> => {
      await sys.rewrite((p) => ({ ...p, extra: { ...p.extra, webapp: { ...(p.extra?.webapp as object), auth } } }));
      s.reconfigure(loadConfig(sys.configPath));
    };
    await reload([{ ...LOCAL, secret: ROTATED }]);
    const newToken = await signToken(loadConfig(sys.configPath).webapp.auth[0]!, { user: 'bob', role: 'operator', expiresInS: 60 });
    await waitFor(async () => (await pause(newToken)).status === 200, { timeoutMs: 10_000, what: 'the rotated secret taken' });
    const refused = await pause(oldToken);
    assert.equal(refused.status, 401, refused.body);
    assert.ok(!refused.body.includes(SECRET));
  });

  void it('answers every write 403 without webapp.auth', async () => {
    const { port, server } = await start(undefined);
    const s = await server();
    const got = await call(port, '/api/image/deb/pause', { method: 'POST', headers: { 'Content-Type': 'application/json' } });
    assert.equal(got.status, 403);
    assert.match(got.body, /webapp\.auth/);
    assert.deepEqual(await s.store.listPauses(), []);
  });
});
