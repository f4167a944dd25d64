/** One ZooKeeper transaction (multi): queued, committed, and told to the write observer. */
import zookeeper from 'node-zookeeper-client';
import { createdStat, exactVersion, MODE, zkError, type Op, type OpResult, type Stat } from './zk-library.js';
import type { WriteObserver } from './write-observer.js';

/**
 * Sends `ops` as one transaction on `client`; its results (or the error of the op that
 * failed, its `path` set) to `cb`, from the reply callback, after `observer` heard of the writes.
 */
export function zkMulti(client: zookeeper.Client, ops: readonly Op[], what: string, observer: WriteObserver | undefined,
  cb: (err: unknown, results: OpResult[]) => void): void {
  // Sets, and creates whose data is known (their stat a stand-in, see Op), told to the observer.
  const sets = ops.flatMap((o, i) => {
    if (o.op === 'set') return [{ i, path: o.path, data: o.data, created: false }];
    if (o.op === 'create' && o.known && (o.mode ?? MODE.persistent) === MODE.persistent) {
      return [{ i, path: o.path, data: o.data ?? Buffer.alloc(0), created: true }];
    }
    return [];
  });
  const tell = (results?: Array<{ stat?: Stat }>): void => {
    for (const s of sets) {
      let stat: Stat | undefined;
      if (results) stat = s.created ? createdStat(s.data.length) : results[s.i]?.stat;
      observer?.done(s.path, stat ? { data: s.data, stat } : undefined);
    }
  };
  const tx = client.transaction();
  for (const o of ops) {
    if (o.op === 'create') tx.create(o.path, o.data ?? Buffer.alloc(0), o.mode ?? MODE.persistent);
    else if (o.op === 'set') tx.setData(o.path, o.data, o.version);
    else if (o.op === 'check') tx.check(o.path, o.version);
    else tx.remove(o.path, o.version);
    // node-zookeeper-client's Transaction does `version = version || -1`, so version 0 would
    // mean "any version": put the version asked for back on the queued operation.
    if (o.op !== 'create') exactVersion(tx, o.version);
  }
  if (observer) for (const s of sets) observer.sent(s.path);
  try {
    commit(tx, ops, what, (e, results) => { tell(e ? undefined : results); cb(e, results); });
  } catch (err) {
    tell(undefined);
    throw err;
    }
}

/** Commits `tx`; its results (or the error of the op that failed) to `cb`, from the reply callback. */
function commit(tx: zookeeper.Transaction, ops: readonly Op[], what: string, cb: (err: unknown, results: OpResult[]) => void): void {
  tx.commit((e, results: Array<{ type: number; err?: number; path?: string; stat?: Stat }> | undefined) => {
    if (!e) { cb(null, (results ?? []).map((r) => ({ path: r.path, stat: r.stat }))); return; }
    const failed = (results ?? []).findIndex((r) => r.err !== undefined && r.err !== 0 && r.err !== zookeeper.Exception.RUNTIME_INCONSISTENCY);
    const path = failed >= 0 ? ops[failed]?.path : undefined;
    cb(zkError(e, what, path), []);
  });
}
