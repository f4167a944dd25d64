/**
 * The store contract for issue 25: the audit trail of web writes (ids, newest first, paging,
 * refused malformed entries, an attempt completed in place with its outcome, a corrupt entry named by
 * listCorrupt only when asked), each build's log URL (stored, patched, cleared, not exported),
 * and upload retry requests (as build requests: refreshed, cleared up to a time). Part of
 * storeContract in store.contract.ts; pruning past AUDIT_KEEP and corrupt entries are tested
 * per backend under test/unit/store/.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ImageData, ImageDataStore } from '../../lib/store/image-data.js';
import type { AuditRecord, NewAuditRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import type { Spoil } from './spoil.js';
import { storeError, T0, type StoreHarness } from './store-helpers.js';

/** An audit entry of `action` on `target` (the rest fixed). */
export function auditEntry(n: number, over: Partial<NewAuditRecord> = {}): NewAuditRecord {
  return {
    time: T0 + n, user: 'alice', role: 'admin', authenticator: 'jwt', action: 'image-build', target: `image-${n}`,
    method: 'POST', path: `/api/image/image-${n}/build`, status: 202, result: 'ok', message: 'build requested', remote: '127.0.0.1', ...over,
  };
}

/** Both backends' stores export image data (StoreFacade). */
const exported = (s: Store): Promise<ImageData> => (s as Store & ImageDataStore).exportImageData();

const idsOf = (list: AuditRecord[]): string[] => list.map((e) => e.id);
const seq = (from: number, to: number): string[] => {
  const out: string[] = [];
  for (let i = from; from <= to ? i <= to : i >= to; i += from <= to ? 1 : -1) out.push(String(i).padStart(10, '0'));
  return out;
};

/** Registers the issue 25 cases. */
export function webStoreContract(h: StoreHarness, spoil: () => Spoil): void {
  void describe('audit trail', () => {
    void it('records entries with 10-digit sequence ids and lists them newest first, as given', async () => {
      const s = h.store;
      assert.deepEqual(await s.listAudit(), []);
      const a = await s.recordAudit(auditEntry(1));
      const b = await s.recordAudit(auditEntry(2, { user: null, role: null, authenticator: null, result: 'denied', status: 401, message: 'no token', remote: null }));
      assert.deepEqual(a, { id: '0000000001', ...auditEntry(1) });
      assert.equal(b.id, '0000000002');
      assert.deepEqual(await s.listAudit(), [b, a]);
      const other = await h.openAnother();
      assert.deepEqual(await other.recordAudit(auditEntry(3)), { id: '0000000003', ...auditEntry(3) }, 'one sequence for every handle');
      assert.deepEqual(idsOf(await s.listAudit()), seq(3, 1));
    });

    void it('answers at most 100 by default, `limit` of them when given, and pages with `before`', async () => {
      const s = h.store;
      for (let i = 1; i <= 105; i++) await s.recordAudit(auditEntry(i));
      assert.deepEqual(idsOf(await s.listAudit()), seq(105, 6));
      assert.deepEqual(idsOf(await s.listAudit({ limit: 3 })), seq(105, 103));
      assert.deepEqual(idsOf(await s.listAudit({ limit: 3, before: '0000000005' })), seq(4, 2));
      assert.deepEqual(idsOf(await s.listAudit({ before: '0000000003' })), seq(2, 1));
      assert.deepEqual(await s.listAudit({ before: '0000000001' }), []);
      assert.deepEqual((await s.listAudit({ limit: 1 }))[0], { id: '0000000105', ...auditEntry(105) });
    });

    void it('refuses a malformed entry or filter with StoreError and records nothing', async () => {
      const s = h.store;
      await storeError(s.recordAudit(auditEntry(1, { result: 'maybe' as never })));
      await storeError(s.recordAudit(auditEntry(1, { status: '200' as never })));
      await storeError(s.recordAudit(auditEntry(1, { time: Number.NaN })));
      await storeError(s.recordAudit(auditEntry(1, { action: undefined as never })));
      await storeError(s.listAudit({ limit: 0 }));
      await storeError(s.listAudit({ before: '../1' }));
      assert.deepEqual(await s.listAudit(), []);
      assert.equal((await s.recordAudit(auditEntry(1))).id, '0000000001', 'a refused entry takes no id');
    });

    void it('completes an attempted entry in place with its outcome, once: one action is one entry', async () => {
      const s = h.store;
      const attempt = auditEntry(1, { status: 0, result: 'attempted', message: 'image-build image-1 attempted by alice' });
      const a = await s.recordAudit(attempt);
      const b = await s.recordAudit(auditEntry(2));
      const outcome = { status: 200, result: 'ok' as const, message: 'build of image-1 requested' };
      const done = await s.completeAudit(a.id, outcome);
      assert.deepEqual(done, { ...a, ...outcome }, 'the rest, time included, stays');
      assert.deepEqual(await s.listAudit(), [b, { ...a, ...outcome }]);
      assert.deepEqual(await (await h.openAnother()).listAudit(), [b, { ...a, ...outcome }], 'another handle reads it');
      // Only an attempted entry is completed: not twice, not a finished one, not one that does not exist.
      assert.equal(await s.completeAudit(a.id, { status: 500, result: 'error', message: 'again' }), undefined);
      assert.equal(await s.completeAudit(b.id, { status: 409, result: 'refused', message: 'over a finished one' }), undefined);
      assert.equal(await s.completeAudit('0000000099', outcome), undefined);
      assert.deepEqual(await s.listAudit(), [b, { ...a, ...outcome }]);
      // An entry left attempted (its outcome never written) stays visible as attempted.
      const c = await s.recordAudit(auditEntry(3, { status: 0, result: 'attempted' }));
      assert.deepEqual((await s.listAudit({ limit: 1 }))[0], c);
      assert.equal(c.result, 'attempted');
    });

    void it('refuses a malformed outcome or id with StoreError and leaves the entry attempted', async () => {
      const s = h.store;
      const a = await s.recordAudit(auditEntry(1, { status: 0, result: 'attempted' }));
      await storeError(s.completeAudit(a.id, { status: 200, result: 'attempted' as never, message: 'x' }));
      await storeError(s.completeAudit(a.id, { status: 200, result: 'maybe' as never, message: 'x' }));
      await storeError(s.completeAudit(a.id, { status: '200' as never, result: 'ok', message: 'x' }));
      await storeError(s.completeAudit(a.id, { status: 200, result: 'ok', message: 7 as never }));
      await storeError(s.completeAudit('../1', { status: 200, result: 'ok', message: 'x' }));
      assert.deepEqual(await s.listAudit(), [a]);
    });

    void it('leaves audit entries out of the image data export', async () => {
      await h.store.recordAudit(auditEntry(1));
      const data = await exported(h.store);
      assert.equal(JSON.stringify(data).includes('image-build'), false);
      assert.equal(Object.keys(data).some((k) => /audit/i.test(k)), false);
    });

    void it('names a corrupt entry in listCorrupt with kind audit only when asked (skipped by listAudit)', async () => {
      const s = h.store;
      const [a, b, c] = [await s.recordAudit(auditEntry(1)), await s.recordAudit(auditEntry(2)), await s.recordAudit(auditEntry(3))];
      await spoil()({ kind: 'audit', id: b.id }, 'unknown-state');
      await spoil()({ kind: 'audit', id: c.id }, 'no-time');
      assert.deepEqual(await s.listAudit(), [a], 'listAudit skips the corrupt entries');
      const corrupt = await s.listCorrupt();
      assert.deepEqual(corrupt.map((x) => [x.kind, x.id]), [['audit', b.id], ['audit', c.id]]);
      assert.match(corrupt[0]?.reason ?? '', /result is "exploded"/);
      assert.match(corrupt[1]?.reason ?? '', /time is/);
      assert.deepEqual(await s.listCorrupt({ kinds: ['audit'] }), corrupt);
      assert.deepEqual(await s.listCorrupt({ kinds: ['node'] }), []);
      assert.deepEqual(await s.listCorrupt({ kinds: ['build', 'upload', 'pause', 'build-request', 'node', 'request', 'launcher', 'pin', 'revocation', 'upload-retry'] }), []);
      assert.equal((await s.recordAudit(auditEntry(4))).id, '0000000004', 'a corrupt entry keeps its id');
    });
  });

  void describe('build log URLs', () => {
    const URL_A = 'http://builder-a:8005/build-logs/debian-0000000001';

    void it('has none on a new build, keeps one set by updateBuild through other updates, and drops it when set to null', async () => {
      const s = h.store;
      const b = await s.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      assert.equal('logUrl' in b && b.logUrl !== null && b.logUrl !== undefined, false);
      assert.equal((await s.updateBuild(b.id, { builderHostname: 'builder-a', logUrl: URL_A }))?.logUrl, URL_A);
      assert.equal((await s.getBuild(b.id))?.logUrl, URL_A);
      await s.updateBuild(b.id, { state: 'ready' });
      assert.equal((await s.listBuilds())[0]?.logUrl, URL_A, 'other updates keep it');
      assert.equal((await h.openAnother().then((o) => o.getBuild(b.id)))?.logUrl, URL_A, 'another handle reads it');
      const cleared = await s.updateBuild(b.id, { logUrl: null });
      assert.equal(cleared?.logUrl ?? null, null);
      assert.equal((await s.getBuild(b.id))?.logUrl ?? null, null);
    });

    void it('refuses a log URL that is not a string with StoreError and changes nothing', async () => {
      const b = await h.store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      await storeError(h.store.updateBuild(b.id, { logUrl: 8005 as never }));
      assert.equal((await h.store.getBuild(b.id))?.logUrl ?? null, null);
    });

    void it('leaves log URLs out of the image data export (the store keeps them)', async () => {
      const s = h.store;
      const b = await s.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      await s.updateBuild(b.id, { logUrl: URL_A, state: 'ready' });
      const data = await exported(s);
      assert.equal(data.builds.length, 1);
      assert.equal('logUrl' in (data.builds[0] ?? {}), false);
      assert.equal((await s.getBuild(b.id))?.logUrl, URL_A, 'the store keeps it');
    });
  });

  void describe('upload retry requests', () => {
    void it('records a request stamped with the clock, refreshes it on a repeat, and lists by diskimage then provider', async () => {
      const s = h.store;
      assert.deepEqual(await s.listUploadRetries(), []);
      assert.deepEqual(await s.requestUploadRetry('ubuntu', 'cloud-b'), { diskimage: 'ubuntu', provider: 'cloud-b', requested: T0 });
      h.now = T0 + 5;
      await s.requestUploadRetry('debian', 'cloud-b');
      await s.requestUploadRetry('debian', 'cloud-a');
      h.now = T0 + 9;
      assert.deepEqual(await s.requestUploadRetry('ubuntu', 'cloud-b'), { diskimage: 'ubuntu', provider: 'cloud-b', requested: T0 + 9 });
      assert.deepEqual(await s.listUploadRetries(), [
        { diskimage: 'debian', provider: 'cloud-a', requested: T0 + 5 },
        { diskimage: 'debian', provider: 'cloud-b', requested: T0 + 5 },
        { diskimage: 'ubuntu', provider: 'cloud-b', requested: T0 + 9 },
      ]);
      assert.deepEqual(await s.listBuildRequests(), [], 'not build requests');
    });

    void it('clears a request made at or before requestedUpTo, only for that provider', async () => {
      const s = h.store;
      const r = await s.requestUploadRetry('debian', 'cloud-a');
      await s.requestUploadRetry('debian', 'cloud-b');
      await s.clearUploadRetry('debian', 'cloud-a', r.requested);
      await s.clearUploadRetry('debian', 'never-requested', r.requested);
      await s.clearUploadRetry('never-requested', 'cloud-a', r.requested);
      assert.deepEqual(await s.listUploadRetries(), [{ diskimage: 'debian', provider: 'cloud-b', requested: T0 }]);
    });

    void it('keeps a newer request when a clear names an older requestedUpTo', async () => {
      const s = h.store;
      const seen = await s.requestUploadRetry('debian', 'cloud-a');
      h.now = T0 + 100;
      await s.requestUploadRetry('debian', 'cloud-a');
      await s.clearUploadRetry('debian', 'cloud-a', seen.requested);
      assert.deepEqual(await s.listUploadRetries(), [{ diskimage: 'debian', provider: 'cloud-a', requested: T0 + 100 }]);
      assert.deepEqual(await (await h.openAnother()).listUploadRetries(), [{ diskimage: 'debian', provider: 'cloud-a', requested: T0 + 100 }], 'another handle sees it');
    });

    void it('names a corrupt request in listCorrupt (skipped by the list), and a new request replaces it', async () => {
      const s = h.store;
      await s.requestUploadRetry('debian', 'cloud-a');
      await s.requestUploadRetry('debian', 'cloud-b');
      await spoil()({ kind: 'upload-retry', diskimage: 'debian', provider: 'cloud-a' }, 'no-time');
      assert.deepEqual((await s.listUploadRetries()).map((r) => r.provider), ['cloud-b']);
      const corrupt = await s.listCorrupt();
      assert.deepEqual(corrupt.map((c) => [c.kind, c.id, c.diskimage, c.provider]), [['upload-retry', 'debian/cloud-a', 'debian', 'cloud-a']]);
      assert.match(corrupt[0]?.reason ?? '', /requested/);
      assert.deepEqual(await s.listCorrupt({ kinds: ['upload-retry'] }), corrupt);
      assert.deepEqual(await s.listCorrupt({ kinds: ['build'] }), []);
      h.now = T0 + 7;
      await s.requestUploadRetry('debian', 'cloud-a');
      assert.deepEqual(await s.listCorrupt(), []);
      assert.deepEqual((await s.listUploadRetries()).map((r) => [r.provider, r.requested]), [['cloud-a', T0 + 7], ['cloud-b', T0]]);
    });

    void it('refuses an empty diskimage or provider with StoreError', async () => {
      await storeError(h.store.requestUploadRetry('debian', ''));
      await storeError(h.store.requestUploadRetry('', 'cloud-a'));
      assert.deepEqual(await h.store.listUploadRetries(), []);
    });
  });
}
