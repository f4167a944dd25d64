/**
 * `SessionKeeper.close()` while a renewal is replacing a lapsed session, on a real SQLite
 * store: the session is reaped from outside (as another process does when this one stalled
 * past its TTL), the keeper's next renewal opens a replacement, and close() is called while
 * that opening is still on its way (the store is slow: its openSession is held on a gate).
 * The replacement must be closed too: no session of the keeper's stays open.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SessionKeeper } from '../../../lib/client/session-keeper.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { testLogger } from '../../support/test-log.js';

describe('session keeper closed during a renewal', () => {
  let dir: string;
  let store: Store;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-keeper-close-'));
    store = await openStore({ stateDir: dir, zookeeperServers: [] });
  });

  after(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('closes the replacement a renewal opened, so no session stays open', async () => {
    let gate: (() => void) | undefined;
    let opening = false;
    // The real store, with openSession held once the keeper has its first session (a busy store).
    const slow: Store = Object.create(store) as Store;
    let first = true;
    slow.openSession = async (input) => {
      if (!first) {
        opening = true;
        await new Promise<void>((r) => { gate = r; });
      }
      first = false;
      return store.openSession(input);
    };
    const owner = `keeper-close-${process.pid}`;
    const keeper = await SessionKeeper.open(slow, { owner, ttlMs: 3000, renewIntervalMs: 50, onLapse: 'replace', log: testLogger() });
    const original = keeper.id;
    // Reaped from outside: the next renewal finds it gone and opens a replacement.
    await store.closeSession(original);
    await waitFor(() => opening && gate !== undefined, { timeoutMs: 5000, what: 'the renewal to open a replacement', intervalMs: 10 });
    const closed = keeper.close();
    (gate as () => void)();
    await closed;
    const live = [];
    for (const s of (await store.listSessions()).filter((x) => x.owner === owner)) {
      if (await store.isSessionLive(s.id)) live.push(s.id);
    }
    assert.deepEqual(live, [], `sessions of ${owner} left open after close()`);
    assert.notEqual(keeper.id, original, 'the renewal did replace the session before it was closed');
  });
});
