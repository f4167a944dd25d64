/**
 * The request handler with a reuse-only driver on a real (SQLite) store: it takes the pool
 * worker's listed copy without reading it again, so a request taken meanwhile must be left
 * alone and any node it took for it given back.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { PoolInfo, Provider, RequestHandler } from '../../../../lib/drivers/contract/driver.js';
import { nodeLock, requestLock } from '../../../../lib/store/lock-names.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import { NodeRequestHandler } from '../../../../server/launcher/request-handler.js';
import { testLogger } from '../../../support/test-log.js';

const POOL: PoolInfo = { name: 'main', maxServers: 10, labels: ['small'], nodeAttributes: {} };

/** A static-like driver: only ready nodes are handed out, every one of them usable. */
const reuseOnly: RequestHandler = {
  canLaunch: false, aliveCount: 0,
  imagesAvailable: () => Promise.resolve(true),
  hasProviderQuota: () => Promise.resolve(true),
  hasRemainingQuota: () => Promise.resolve(false),
  checkReusableNode: () => Promise.resolve(true),
  nodeMetadata: () => ({}),
  launch: () => { throw new Error('cannot launch'); },
  launchesComplete: () => true,
};
const provider = { name: 'p', getRequestHandler: () => reuseOnly } as unknown as Provider;

void describe('NodeRequestHandler', () => {
  let dir: string;
  let store: SqliteStore;
  let sessionId: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'request-handler-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    sessionId = (await store.openSession({ owner: 'launcher', hostname: 'h', pid: 1, ttlMs: 60_000 })).id;
  });

  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const handlerFor = async (listed: Awaited<ReturnType<SqliteStore['createRequest']>>): Promise<NodeRequestHandler> => {
    assert.equal(await store.tryLock(requestLock(listed.id), sessionId, { exclusive: true }), true);
    const ready = async (label: string): Promise<NodeRecord[]> =>
      (await store.listNodes({ states: ['ready'] })).filter((n) => n.allocatedTo === null && n.labels.includes(label));
    return new NodeRequestHandler({
      store, log: testLogger(), launcherId: 'launcher-1', sessionId: () => sessionId, provider, pool: POOL, readyCandidates: ready,
      poolNodeCount: async () => (await store.listNodes()).length,
    }, listed);
  };

  void it('fulfils a request with a ready node and releases both locks', async () => {
    const node = await store.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['small'] });
    const req = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
    const h = await handlerFor(req);
    await h.run();
    assert.equal(await h.poll(), true);
    const done = await store.getRequest(req.id);
    assert.equal(done?.state, 'fulfilled');
    assert.deepEqual(done?.nodes, [node.id]);
    assert.equal((await store.getNode(node.id))?.allocatedTo, req.id);
    assert.equal(await store.getLock(nodeLock(node.id)), undefined);
    assert.equal(await store.getLock(requestLock(req.id)), undefined);
    await store.deleteNode(node.id);
  });

  void it('fulfils a request filled at once from ready nodes without marking it pending first', async () => {
    const node = await store.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['small'] });
    const req = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
    const h = await handlerFor(req);
    await h.run();
    assert.equal((await store.getRequest(req.id))?.state, 'requested', 'no pending write while its node was taken');
    assert.equal(await h.poll(), true);
    assert.equal((await store.getRequest(req.id))?.state, 'fulfilled');
    await store.deleteNode(node.id);
  });

  void it('marks a request pending while it waits for a slot, then fulfils it', async () => {
    const req = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
    const h = await handlerFor(req);
    await h.run();
    assert.equal((await store.getRequest(req.id))?.state, 'pending');
    assert.equal(await h.poll(), false, 'no ready node yet');
    const node = await store.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['small'] });
    await h.run();
    assert.equal(await h.poll(), true);
    const done = await store.getRequest(req.id);
    assert.deepEqual([done?.state, done?.nodes], ['fulfilled', [node.id]]);
    await store.deleteNode(node.id);
  });

  void it('leaves a listed request that is no longer requested as it is, and gives back the node it took meanwhile', async () => {
    const node = await store.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['small'] });
    const listed = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
    // Another launcher took it (and lost its lock) after the pool worker listed it.
    await store.updateRequest(listed.id, { state: 'pending' });
    const h = await handlerFor(listed);
    await h.run();
    assert.equal(await h.poll(), true, 'done: the fulfilling write expected it still requested');
    const after = await store.getRequest(listed.id);
    assert.equal(after?.state, 'pending');
    assert.deepEqual(after?.declinedBy, [], 'not declined: it was not ours');
    const back = await store.getNode(node.id);
    assert.equal(back?.state, 'ready');
    assert.equal(back?.allocatedTo, null);
    assert.equal(await store.getLock(nodeLock(node.id)), undefined);
    assert.equal(await store.getLock(requestLock(listed.id)), undefined);
    await store.deleteNode(node.id);
  });
});
