/**
 * The audit trail's shared decisions (lib/store/audit.ts): when a write prunes and up to which
 * id, list filters, and which stored entries are corrupt.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CorruptRecordError, StoreError } from '../../../lib/errors.js';
import { AUDIT_KEEP, AUDIT_PRUNE_EVERY, auditFromFields, auditPruneUpTo, auditQuery, formatAuditId } from '../../../lib/store/audit.js';
import { auditEntry } from '../../contract/store-web.contract.js';

describe('audit trail decisions', () => {
  it('prunes only at every AUDIT_PRUNE_EVERYth entry past AUDIT_KEEP, up to the entry AUDIT_KEEP older', () => {
    assert.equal(AUDIT_KEEP, 10_000);
    assert.equal(auditPruneUpTo(1), undefined);
    assert.equal(auditPruneUpTo(AUDIT_KEEP), undefined, 'nothing to drop yet');
    assert.equal(auditPruneUpTo(AUDIT_KEEP + 1), undefined, 'not every write');
    assert.equal(auditPruneUpTo(AUDIT_KEEP + AUDIT_PRUNE_EVERY), AUDIT_PRUNE_EVERY);
    assert.equal(auditPruneUpTo(123_400), 113_400);
    assert.equal(auditPruneUpTo(123_401), undefined);
    assert.equal(auditPruneUpTo(20, 5, 10), 15, 'keep and period are parameters');
  });

  it('keeps at least AUDIT_KEEP entries and at most AUDIT_KEEP + AUDIT_PRUNE_EVERY - 1 after any write', () => {
    let oldest = 1;
    for (let seq = 1; seq <= AUDIT_KEEP + 5 * AUDIT_PRUNE_EVERY; seq++) {
      const upTo = auditPruneUpTo(seq);
      if (upTo !== undefined) oldest = Math.max(oldest, upTo + 1);
      const kept = seq - oldest + 1;
      assert.ok(kept >= Math.min(seq, AUDIT_KEEP) && kept < AUDIT_KEEP + AUDIT_PRUNE_EVERY, `after ${seq}: ${kept} kept`);
    }
  });

  it('reads list filters: default limit 100, a positive integer limit, a 10-digit before', () => {
    assert.deepEqual(auditQuery(), { limit: 100, before: undefined });
    assert.deepEqual(auditQuery({ limit: 7, before: '0000000042' }), { limit: 7, before: '0000000042' });
    for (const bad of [{ limit: 0 }, { limit: -1 }, { limit: 1.5 }, { limit: Number.NaN }, { before: '42' }, { before: '../0000000001' }]) {
      assert.throws(() => auditQuery(bad), StoreError, JSON.stringify(bad));
    }
    assert.equal(formatAuditId(42), '0000000042');
  });

  it('names the field of a corrupt stored entry and accepts a well-formed one', () => {
    const good = auditEntry(1);
    assert.deepEqual(auditFromFields('0000000001', { ...good }), { id: '0000000001', ...good });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...good, time: 'yesterday' }, /time is string/],
      [{ ...good, result: 'maybe' }, /result is "maybe"/],
      [{ ...good, status: null }, /status is null/],
      [{ ...good, user: 7 }, /user is number/],
      [{ ...good, action: undefined }, /action is missing/],
    ];
    for (const [j, reason] of cases) {
      assert.throws(() => auditFromFields('0000000002', j), (err: unknown) => err instanceof CorruptRecordError && err.kind === 'audit' && reason.test(err.reason));
    }
  });
});
