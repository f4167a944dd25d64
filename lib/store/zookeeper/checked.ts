/**
 * Reading records from the watched cache with corrupt ones set aside: each entry is parsed once
 * per data version; a record that does not parse or validate is remembered as corrupt (and
 * logged once), so list calls skip it and {@link corruptEntry} names it.
 */
import { CorruptRecordError } from '../../errors.js';
import { corruptOf, type CorruptLog, type CorruptRecord } from '../corrupt.js';
import type { Entry } from './tree-cache.js';

/** What an entry's memo holds when its data is corrupt. */
class CorruptMemo {
  constructor(readonly record: CorruptRecord) {}
}

/** Where a record lives, for its corrupt description. */
export interface RecordWhere {
  diskimage?: string;
  provider?: string | null;
}

/**
 * The record of a cached entry, parsed with `parse` once per data version; undefined when the
 * entry is corrupt (remembered, and reported to `log` once). Errors other than
 * CorruptRecordError are thrown.
 */
export function memoized<T>(entry: Entry, log: CorruptLog, parse: () => T, where: RecordWhere = {}): T | undefined {
  const m = entry.memo;
  if (m instanceof CorruptMemo) return undefined;
  if (m !== undefined) return m as T;
  try {
    const rec = parse();
    entry.memo = rec;
    return rec;
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    const record = corruptOf(err, where);
    entry.memo = new CorruptMemo(record);
    log.report(record, entry.stat ? (entry.stat.mzxid as unknown as Buffer).toString('hex') : '');
    return undefined;
  }
}

/** The corrupt description of an entry `memoized` found corrupt; undefined otherwise. */
export function corruptEntry(entry: Entry): CorruptRecord | undefined {
  return entry.memo instanceof CorruptMemo ? { ...entry.memo.record } : undefined;
}
