/**
 * The write API's conformance cases, run on each store: for every write endpoint, the right
 * role changes the state; no token, a bad signature and an expired token get 401 and a weaker
 * role 403, each leaving every record as it was; the audit trail holds one entry, the right
 * role's action (written attempted, then completed with its outcome), who (as the verified
 * token says) and how it ended; the three that name nobody are counted for their source, the
 * weaker role's refusal for its user, none of them an entry.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { Store } from '../../../../lib/store/store.js';
import type { Role } from '../../../../lib/web-auth/auth-types.js';
import { seed, startApiEnv, stateOf, type ApiEnv, type ApiEnvOptions, type Seeded } from './api-env.js';
import { refusalsBySourceAndUser } from '../../../support/refusal-minutes.js';

/** One endpoint's case. */
interface Case {
  name: string;
  action: string;
  role: Exclude<Role, 'read'>;
  /** Records the endpoint needs besides the seed (a pause to unpause, …). */
  prepare?: (store: Store, s: Seeded) => Promise<void>;
  /** `target`: the audit entry's target. */
  request: (s: Seeded) => { method: string; path: string; body?: Record<string, unknown>; target: string };
  /** Asserts the state the right role's request left. */
  changed: (store: Store, s: Seeded) => Promise<void>;
}

const WEAKER: Record<Case['role'], Role> = { operator: 'read', admin: 'operator' };

const CASES: Case[] = [
  {
    name: 'build an image', action: 'image-build', role: 'operator',
    request: () => ({ method: 'POST', path: '/api/image/deb/build', target: 'deb' }),
    changed: async (store) => assert.deepEqual((await store.listBuildRequests()).map((r) => r.diskimage), ['deb']),
  },
  {
    name: 'delete a build', action: 'image-delete', role: 'admin',
    request: (s) => ({ method: 'DELETE', path: `/api/build/${s.newer.id}`, target: s.newer.id }),
    changed: async (store, s) => assert.equal((await store.getBuild(s.newer.id))?.state, 'deleting'),
  },
  {
    name: 'delete an upload', action: 'image-delete-upload', role: 'admin',
    request: (s) => ({ method: 'DELETE', path: `/api/upload/${s.failedUpload.id}`, target: s.failedUpload.id }),
    changed: async (store, s) => assert.equal((await store.getUpload(s.failedUpload.id))?.state, 'deleting'),
  },
  {
    name: 'pause uploads to a provider', action: 'image-pause', role: 'operator',
    request: () => ({ method: 'POST', path: '/api/image/deb/pause', body: { provider: 'cloud-b', reason: 'glance upgrade' }, target: 'deb@cloud-b' }),
    changed: async (store) => assert.deepEqual((await store.listPauses()).map((p) => [p.diskimage, p.provider, p.reason]), [['deb', 'cloud-b', 'glance upgrade']]),
  },
  {
    name: 'unpause builds', action: 'image-unpause', role: 'operator',
    prepare: (store) => store.setPause('deb', null, true, 'before'),
    request: () => ({ method: 'POST', path: '/api/image/deb/unpause', body: {}, target: 'deb' }),
    changed: async (store) => assert.deepEqual(await store.listPauses(), []),
  },
  {
    name: 'retry a failed upload', action: 'upload-retry', role: 'operator',
    request: (s) => ({ method: 'POST', path: `/api/upload/${s.failedUpload.id}/retry`, target: s.failedUpload.id }),
    changed: async (store) => assert.deepEqual((await store.listUploadRetries()).map((r) => [r.diskimage, r.provider]), [['deb', 'cloud-b']]),
  },
  {
    name: 'pin a build', action: 'image-pin', role: 'operator',
    request: (s) => ({ method: 'POST', path: '/api/image/deb/pin', body: { build: s.older.id, provider: 'cloud-a', reason: 'newer breaks' }, target: `deb@cloud-a:${s.older.id}` }),
    changed: async (store, s) => assert.deepEqual((await store.listPins()).map((p) => [p.diskimage, p.provider, p.buildId]), [['deb', 'cloud-a', s.older.id]]),
  },
  {
    name: 'unpin', action: 'image-unpin', role: 'operator',
    prepare: async (store, s) => { await store.setPin('deb', null, s.older.id, 'pinned'); },
    request: () => ({ method: 'POST', path: '/api/image/deb/unpin', body: { reason: 'fixed' }, target: 'deb' }),
    changed: async (store) => assert.deepEqual(await store.listPins(), []),
  },
  {
    name: 'revoke a build', action: 'image-revoke', role: 'operator',
    request: (s) => ({ method: 'POST', path: `/api/build/${s.newer.id}/revoke`, body: { reason: 'boots read-only' }, target: s.newer.id }),
    changed: async (store, s) => assert.deepEqual((await store.listRevocations()).map((r) => [r.buildId, r.reason]), [[s.newer.id, 'boots read-only']]),
  },
  {
    name: 'unrevoke a build', action: 'image-unrevoke', role: 'operator',
    prepare: (store, s) => store.setRevocation('deb', s.newer.id, true, 'oops'),
    request: (s) => ({ method: 'POST', path: `/api/build/${s.newer.id}/unrevoke`, body: {}, target: s.newer.id }),
    changed: async (store) => assert.deepEqual(await store.listRevocations(), []),
  },
  {
    name: 'promote a build', action: 'image-promote', role: 'operator',
    request: (s) => ({ method: 'POST', path: `/api/build/${s.newer.id}/promote`, body: { reason: 'looks good' }, target: s.newer.id }),
    changed: async (store, s) => assert.equal((await store.getUpload(s.newerUpload.id))?.rollout?.state, 'promoted'),
  },
  {
    name: 'hold a node', action: 'hold', role: 'operator',
    request: (s) => ({ method: 'POST', path: `/api/node/${s.node.id}/hold`, body: { reason: 'debugging', expires: 3600 }, target: s.node.id }),
    changed: async (store, s) => {
      const n = await store.getNode(s.node.id);
      assert.equal(n?.state, 'hold');
      assert.equal(n?.holdReason, 'debugging');
    },
  },
  {
    name: 'release a node', action: 'release', role: 'operator',
    prepare: async (store, s) => { await store.updateNode(s.node.id, { state: 'hold', holdReason: 'held' }); },
    request: (s) => ({ method: 'POST', path: `/api/node/${s.node.id}/release`, target: s.node.id }),
    changed: async (store, s) => assert.equal((await store.getNode(s.node.id))?.state, 'used'),
  },
  {
    name: 'delete a node', action: 'delete', role: 'admin',
    request: (s) => ({ method: 'DELETE', path: `/api/node/${s.node.id}`, target: s.node.id }),
    changed: async (store, s) => assert.equal((await store.getNode(s.node.id))?.state, 'deleting'),
  },
];

/** Registers the cases for a store (`envOpts` picks it). */
export function describeEndpoints(title: string, envOpts: () => ApiEnvOptions): void {
  describe(title, () => {
    let env: ApiEnv;
    let seeded: Seeded;

    beforeEach(async () => {
      env = await startApiEnv(envOpts());
      seeded = await seed(env.store);
    });
    afterEach(async () => {
      await env?.close();
    });

    for (const c of CASES) {
      it(`${c.name}: ${c.role} does it; ${WEAKER[c.role]}, a forged, an expired and no token change nothing; the audit trail has each`, async () => {
        await c.prepare?.(env.store, seeded);
        const r = c.request(seeded);
        const before = await stateOf(env.store);
        const weaker = WEAKER[c.role];
        const attempts: Array<{ token?: string; status: number; user: string | null }> = [
          { status: 401, user: null },
          { token: await env.forgedToken(c.role), status: 401, user: null },
          { token: await env.expiredToken(c.role), status: 401, user: null },
          { token: await env.token(weaker), status: 403, user: `${weaker}-user` },
        ];
        for (const a of attempts) {
          const res = await env.call(r.method, r.path, { token: a.token, body: r.body });
          assert.equal(res.status, a.status, `${a.token === undefined ? 'no token' : a.user ?? 'bad token'}: ${JSON.stringify(res.json)}`);
          assert.equal(res.json.ok, false);
          assert.equal(typeof res.json.message, 'string');
          if (a.status === 401) assert.equal(res.headers['www-authenticate'], 'Bearer');
        }
        assert.equal(await stateOf(env.store), before, 'a refused request changes nothing');

        const ok = await env.call(r.method, r.path, { token: await env.token(c.role), body: r.body });
        assert.equal(ok.status, 200, JSON.stringify(ok.json));
        assert.equal(ok.json.ok, true);
        await c.changed(env.store, seeded);

        // One entry: the right role's action, its attempt completed in place with its outcome.
        const trail = await env.store.listAudit();
        assert.deepEqual(trail.map((e) => ({ action: e.action, target: e.target, method: e.method, path: e.path, status: e.status, user: e.user, result: e.result, role: e.role })),
          [{ action: c.action, target: r.target, method: r.method, path: r.path, status: 200, user: `${c.role}-user`, result: 'ok', role: c.role }]);
        assert.equal(trail[0]?.remote !== null && /127\.0\.0\.1/.test(trail[0]?.remote ?? ''), true, `remote ${trail[0]?.remote}`);
        assert.equal(trail[0]?.authenticator, 'local');
        // No token, a forged and an expired one name nobody: counted for their source; the weaker role's refusal for its user.
        const counted = await refusalsBySourceAndUser(env.ledger, 10);
        const shown = (a: (typeof counted)[number] | undefined): unknown[] => [a?.source, a?.user, a?.count, a?.limited, a?.statuses, a?.reasons, a?.requests];
        assert.deepEqual(counted.map((a) => a.user).sort(), [`${weaker}-user`, null].sort());
        assert.deepEqual(shown(counted.find((a) => a.user === null)),
          ['127.0.0.1', null, 3, 0, { 401: 3 }, { 'no-token': 1, 'bad-token': 2 }, { [`${r.method} ${r.path}`]: 3 }]);
        assert.deepEqual(shown(counted.find((a) => a.user !== null)),
          ['127.0.0.1', `${weaker}-user`, 1, 0, { 403: 1 }, { role: 1 }, { [`${r.method} ${r.path}`]: 1 }]);
        // The answer's sentence, and a reason the action does not keep itself.
        const note = typeof r.body?.reason === 'string' && !['image-pause', 'image-pin', 'image-revoke', 'hold'].includes(c.action) ? ` (reason: ${r.body.reason})` : '';
        assert.equal(trail[0]?.message, `${String(ok.json.message)}${note}`);
        for (const e of trail) assert.doesNotMatch(JSON.stringify(e), /eyJ/, 'no token in the audit trail');
      });
    }
  });
}
