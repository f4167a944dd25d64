/**
 * Id sequences that start at 1 and never go back, kept in counter znodes under
 * `/nodepool/sequences/` (ZooKeeper's own sequential suffix starts at 0 and counts deletes
 * too). The counter is bumped with a version-checked setData inside the same multi() that
 * creates the record, so two writers never take one value, in any process.
 *
 * A connection lost while the multi was in flight leaves "did it apply?" open. Each bump also
 * records a random token among the counter's last {@link RECENT} tokens; after reconnecting the
 * writer reads the counter and finds its token there (applied: done) or not (retry), so a
 * retried create never makes a second record.
 */
import { randomBytes } from 'node:crypto';
import { StoreError, ZooKeeperError } from '../../errors.js';
import { decode, encode } from './records.js';
import type { ZkClient } from './zk-client.js';
import type { Op } from './zk-library.js';

/** How many recent tokens a counter keeps. */
const RECENT = 32;
/** Attempts before giving up on a counter other writers keep moving. */
const MAX_ATTEMPTS = 200;

/** What one attempt writes besides the counter. */
export interface SequencePlan {
  /** The value the counter moves to (may be past `next` when ids are skipped). */
  value: number;
  ops: Op[];
}

interface Counter {
  value: number;
  recent: string[];
  version: number | undefined;
}

/** Counters under one sequences directory. */
export class Sequences {
  /** One allocation at a time per counter in this process (others still race, and retry). */
  private readonly queues = new Map<string, Promise<unknown>>();
  /** What this handle last wrote to each counter: the next bump needs no read unless another writer moved it. */
  private readonly known = new Map<string, Counter>();

  constructor(private readonly client: () => ZkClient, private readonly dir: string) {}

  /**
   * Moves counter `name` on and runs `plan(next)`'s ops in the same transaction; returns the
   * value taken. `plan` is called again for each retry; when one of its creates finds the node
   * there already, the next attempt starts past that value. Thrown: the ZooKeeperError of one of
   * the plan's ops (nothing applied), or StoreError when the outcome cannot be known.
   */
  next(name: string, what: string, plan: (next: number) => Promise<SequencePlan> | SequencePlan): Promise<number> {
    const prev = this.queues.get(name) ?? Promise.resolve();
    const run = prev.catch(() => undefined).then(() => this.allocate(name, what, plan));
    this.queues.set(name, run);
    void run.finally(() => { if (this.queues.get(name) === run) this.queues.delete(name); }).catch(() => undefined);
    return run;
  }

  private async allocate(name: string, what: string, plan: (next: number) => Promise<SequencePlan> | SequencePlan): Promise<number> {
    const path = `${this.dir}/${name}`;
    // Past a record that exists at an id the counter had not reached (written by another program).
    let floor = 0;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const counter = this.known.get(path) ?? await this.read(path, what);
      this.known.delete(path);
      const { value, ops } = await plan(Math.max(counter.value, floor) + 1);
      const token = randomBytes(8).toString('hex');
      const recent = [...counter.recent, token].slice(-RECENT);
      const data = encode({ value, recent }, `sequence ${name}`);
      const bump: Op = counter.version === undefined
        ? { op: 'create', path, data }
        : { op: 'set', path, data, version: counter.version };
      try {
        await this.client().multi([bump, ...ops], what);
        this.known.set(path, { value, recent, version: (counter.version ?? -1) + 1 });
        return value;
      } catch (err) {
        if (!(err instanceof ZooKeeperError)) throw err;
        if (err.path === path && (err.code === 'BAD_VERSION' || err.code === 'NODE_EXISTS')) continue;
        if (err.code === 'NODE_EXISTS') { floor = value; continue; }
        if (err.code !== 'CONNECTION_LOSS' && err.code !== 'OPERATION_TIMEOUT') throw err;
        // The multi may or may not have applied: the counter tells.
        const after = await this.read(path, `${what} (finding out whether it applied after: ${err.message})`);
        if (after.recent.includes(token)) { this.known.set(path, after); return value; }
        const moved = (after.version ?? -1) - (counter.version ?? -1);
        if (moved >= RECENT) {
          throw new StoreError(`${what}: the connection to ZooKeeper was lost and ${moved} other writes followed; whether it applied is unknown`, { cause: err });
        }
      }
    }
    throw new StoreError(`${what}: sequence ${name} kept moving under ${MAX_ATTEMPTS} attempts`);
  }

  private async read(path: string, what: string): Promise<Counter> {
    const got = await this.client().getData(path);
    if (!got) return { value: 0, recent: [], version: undefined };
    const j = decode(got.data, `sequence ${path}`);
    const value = typeof j.value === 'number' ? j.value : Number.NaN;
    if (!Number.isInteger(value) || value < 0) throw new StoreError(`${what}: counter ${path} holds no sequence value`);
    return { value, recent: Array.isArray(j.recent) ? j.recent.filter((t): t is string => typeof t === 'string') : [], version: got.stat.version };
  }
}
