/**
 * The store contract for build log tokens (issue 31 §9): a token given to createBuild is kept
 * with the record and read back only through buildLogToken; no BuildRecord (get, list, after an
 * update, from another handle) and no image data export carries it; a build without one reads
 * undefined; a malformed one is refused. On a backend Nodepool 11 reads (ZooKeeper) the record
 * with its `log_token` is still one Nodepool 11 reads. Part of storeContract in store.contract.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newLogToken } from '../../lib/http/build-log-protocol.js';
import type { ImageData, ImageDataStore } from '../../lib/store/image-data.js';
import type { Store } from '../../lib/store/store.js';
import { nodepool11Problems } from '../support/nodepool11-model.js';
import { storeError, type StoreHarness } from './store-helpers.js';

const exported = (s: Store): Promise<ImageData> => (s as Store & ImageDataStore).exportImageData();

/** Registers the log token cases. */
export function logTokenStoreContract(h: StoreHarness): void {
  void describe('build log tokens', () => {
    void it('keeps a new build\'s log token through updates, readable only through buildLogToken, never in a record or the export', async () => {
      const s = h.store;
      const token = newLogToken();
      const b = await s.createBuild({ diskimage: 'debian', formats: ['qcow2'], logToken: token });
      assert.equal(await s.buildLogToken(b.id), token);
      await s.updateBuild(b.id, { builderHostname: 'builder-a', logUrl: `http://builder-a:8005/build-logs/${b.id}` });
      await s.updateBuild(b.id, { state: 'ready', files: [{ format: 'qcow2', size: 1, sha256: 'a'.repeat(64) }] });
      assert.equal(await s.buildLogToken(b.id), token, 'kept through updates');
      const other = await h.openAnother();
      assert.equal(await other.buildLogToken(b.id), token, 'another handle reads it');
      const shown = [b, await s.getBuild(b.id), await s.listBuilds(), await other.getBuild(b.id), await exported(s)];
      for (const v of shown) assert.equal(JSON.stringify(v).includes(token), false, `no record or export holds the token: ${JSON.stringify(v).slice(0, 200)}`);
      const raw = await h.nodepool11Records();
      if (raw) {
        const rec = raw.find((r) => r.kind === 'build' && r.path.endsWith(b.id.slice(-10)));
        assert.equal(rec?.json.log_token, token, 'ZooKeeper: log_token beside Nodepool\'s fields');
        assert.deepEqual(nodepool11Problems('build', rec?.json ?? {}), [], 'Nodepool 11 still reads the record');
      }
    });

    void it('reads undefined for a build created without a token and for an unknown build', async () => {
      const b = await h.store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      assert.equal(await h.store.buildLogToken(b.id), undefined);
      assert.equal(await h.store.buildLogToken('debian-0000000999'), undefined);
      assert.equal(await h.store.buildLogToken('not an id'), undefined);
    });

    void it('refuses a log token that is not 32-128 base64url characters, creating nothing', async () => {
      for (const bad of ['short', 'x'.repeat(129), `${'a'.repeat(40)}/+`, 42]) {
        await storeError(h.store.createBuild({ diskimage: 'debian', formats: ['qcow2'], logToken: bad as string }));
      }
      assert.deepEqual(await h.store.listBuilds(), []);
    });
  });
}
