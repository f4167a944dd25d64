/**
 * The audit trail of web writes in ZooKeeper (issue 25 §1): one znode per entry under this
 * project's `/nodepool/audit/<10-digit id>` (beside Nodepool's tree, which never looks there),
 * ids from the `audit` counter under `/nodepool/sequences/`. The JSON has the record's fields
 * with `time` in float seconds, as the other records. Not in the watched cache: a list reads the
 * children once and the page it answers. Every AUDIT_PRUNE_EVERYth entry removes the entries
 * past AUDIT_KEEP, in transactions of {@link PRUNE_BATCH} removes. An action's outcome is
 * written over its `attempted` znode (a version-checked set), so one action is one znode.
 */
import { CorruptRecordError, ZooKeeperError } from '../../errors.js';
import { AUDIT_KEEP, auditFromFields, auditPruneUpTo, auditQuery, checkAuditOutcome, checkNewAudit } from '../audit.js';
import { corruptOf, type CorruptRecord } from '../corrupt.js';
import type { AuditOutcome, AuditRecord, NewAuditRecord } from '../models.js';
import { ensure, updateJson, type ZkContext } from './context.js';
import { seq10, SEQ_RE } from './layout.js';
import { decodeRecord, encode, toMs, toSeconds } from './records.js';

/** Counter name of audit entries. */
const AUDIT_SEQUENCE = 'audit';
/** Removes per pruning transaction. */
const PRUNE_BATCH = 200;
/** Entries read at once when looking for corrupt ones. */
const READ_BATCH = 200;

/** An entry's JSON. */
function auditJson(e: NewAuditRecord): Record<string, unknown> {
  return { ...e, time: toSeconds(e.time) };
}

/** An entry from its znode's data. Thrown: CorruptRecordError naming what does not parse or validate. */
function auditFromData(id: string, data: Buffer): AuditRecord {
  const j = decodeRecord(data, 'audit', id);
  return auditFromFields(id, { ...j, time: typeof j.time === 'number' ? toMs(j.time) : j.time });
}

/** Audit entries of one store handle. */
export class ZkAudit {
  private dirMade = false;

  /** `keep`: entries kept at least (AUDIT_KEEP; smaller only in tests of pruning). */
  constructor(private readonly ctx: ZkContext, private readonly keep = AUDIT_KEEP) {}

  /** Appends `entry` with the next id (and prunes, every AUDIT_PRUNE_EVERYth entry). Thrown: StoreError for a malformed entry. */
  async record(entry: NewAuditRecord): Promise<AuditRecord> {
    checkNewAudit(entry);
    const dir = this.ctx.layout.audit;
    const data = encode(auditJson(entry), 'audit entry');
    if (!this.dirMade) {
      await ensure(this.ctx.main(), dir);
      this.dirMade = true;
    }
    const seq = await this.ctx.sequences.next(AUDIT_SEQUENCE, 'recording an audit entry',
      (v) => ({ value: v, ops: [{ op: 'create', path: `${dir}/${seq10(v)}`, data }] }));
    const upTo = auditPruneUpTo(seq, this.keep);
    // Best effort: the entry is written; what this prune leaves, the next one removes.
    if (upTo !== undefined) await this.prune(upTo).catch(() => undefined);
    return auditFromFields(seq10(seq), { ...entry });
  }

  /**
   * Writes `outcome` over the `attempted` entry `id`, at the version read (read again when
   * another writer came first); undefined when there is none (pruned, or completed already).
   * Thrown: StoreError for a malformed outcome or id; CorruptRecordError when the entry does not
   * validate.
   */
  async complete(id: string, outcome: AuditOutcome): Promise<AuditRecord | undefined> {
    checkAuditOutcome(id, outcome);
    let attempted = false;
    const done = await updateJson(this.ctx.main(), `${this.ctx.layout.audit}/${id}`, `audit entry ${id}`, (cur) => {
      attempted = cur.result === 'attempted';
      return attempted ? { ...cur, ...outcome } : null;
    });
    if (!done || !attempted) return undefined;
    const j = done.json;
    return auditFromFields(id, { ...j, time: typeof j.time === 'number' ? toMs(j.time) : j.time });
  }

  /** Entries newest first; corrupt ones are skipped (and logged once), and the page filled from older ones. */
  async list(filter?: { limit?: number; before?: string }): Promise<AuditRecord[]> {
    const q = auditQuery(filter);
    const client = this.ctx.main();
    const dir = this.ctx.layout.audit;
    const ids = ((await client.getChildren(dir)) ?? [])
      .filter((n) => SEQ_RE.test(n) && (q.before === undefined || n < q.before))
      .sort().reverse();
    const out: AuditRecord[] = [];
    let next = 0;
    while (out.length < q.limit && next < ids.length) {
      const page = ids.slice(next, next + q.limit - out.length);
      next += page.length;
      const got = await Promise.all(page.map(async (id) => ({ id, got: await client.getData(`${dir}/${id}`) })));
      for (const { id, got: g } of got) {
        if (!g) continue; // pruned meanwhile
        try {
          out.push(auditFromData(id, g.data));
        } catch (err) {
          if (!(err instanceof CorruptRecordError)) throw err;
          this.ctx.corrupt.reportSkipped(err, g.stat.version);
        }
      }
    }
    return out;
  }

  /**
   * The entries that do not parse or validate (kind `audit`, by id). Reads every kept entry, in
   * batches of {@link READ_BATCH}: called only when `listCorrupt` asks for audit entries. They
   * have no delete; pruning removes them.
   */
  async corrupt(): Promise<CorruptRecord[]> {
    const client = this.ctx.main();
    const dir = this.ctx.layout.audit;
    const ids = ((await client.getChildren(dir)) ?? []).filter((n) => SEQ_RE.test(n)).sort();
    const out: CorruptRecord[] = [];
    for (let i = 0; i < ids.length; i += READ_BATCH) {
      const got = await Promise.all(ids.slice(i, i + READ_BATCH).map(async (id) => ({ id, got: await client.getData(`${dir}/${id}`) })));
      for (const { id, got: g } of got) {
        if (!g) continue; // pruned meanwhile
        try {
          auditFromData(id, g.data);
        } catch (err) {
          if (!(err instanceof CorruptRecordError)) throw err;
          out.push(corruptOf(err));
        }
      }
    }
    return out;
  }

  /** Removes the entries up to sequence `upTo`; one that is gone already is skipped. */
  private async prune(upTo: number): Promise<void> {
    const client = this.ctx.main();
    const dir = this.ctx.layout.audit;
    const old = ((await client.getChildren(dir)) ?? []).filter((n) => SEQ_RE.test(n) && Number(n) <= upTo).sort();
    for (let i = 0; i < old.length; i += PRUNE_BATCH) {
      const batch = old.slice(i, i + PRUNE_BATCH);
      try {
        await client.multi(batch.map((n) => ({ op: 'remove', path: `${dir}/${n}`, version: -1 })), `pruning ${batch.length} audit entries`);
      } catch (err) {
        if (!(err instanceof ZooKeeperError && err.code === 'NO_NODE')) throw err;
        // Another handle pruned some of them: each on its own.
        for (const n of batch) await client.remove(`${dir}/${n}`).catch((e: unknown) => { if (!(e instanceof ZooKeeperError && e.code === 'NO_NODE')) throw e; });
      }
    }
  }
}
