/**
 * A SQLite database another process keeps locked past the busy timeout is "not now", not
 * "no": the store's SQLITE_BUSY reads as unreachable, so the launcher tries the request again
 * at its next pass instead of failing it (seen under churn on a loaded machine).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { isStoreUnreachable } from '../../../lib/errors.js';
import { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';

describe('SQLite store busy past its timeout', () => {
  let dir: string;
  let store: SqliteStore;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-sqlite-busy-'));
    store = await SqliteStore.open(path.join(dir, 'state.db'), { busyTimeoutMs: 50 });
  });

  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fails a write with an error that reads as unreachable, and the same write succeeds once the lock is gone', async () => {
    const other = new Database(path.join(dir, 'state.db'), { timeout: 0 });
    other.exec('BEGIN IMMEDIATE');
    let failure: unknown;
    try {
      await store.createRequest({ labels: ['small'], requestor: 'test' });
    } catch (err) {
      failure = err;
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    assert.ok(failure instanceof Error, 'the write failed while the other connection held the lock');
    assert.match(failure.message, /database is locked/);
    assert.equal(isStoreUnreachable(failure), true);
    const made = await store.createRequest({ labels: ['small'], requestor: 'test' });
    assert.deepEqual((await store.listRequests()).map((r) => r.id), [made.id]);
  });

  it('does not call a refused write unreachable', async () => {
    const n = await store.createNode({ provider: 'p', pool: 'main', labels: ['small'], state: 'in-use' });
    await assert.rejects(store.updateNode(n.id, { state: 'used' }, { expectStates: ['ready'] }), (err: unknown) => err instanceof Error && !isStoreUnreachable(err));
  });
});
