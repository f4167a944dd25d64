/**
 * Removes of whole znodes (any version) asked for in one tick go to ZooKeeper as one
 * transaction instead of one request each: a pool worker's handlers release their request and
 * node locks at about the same time. When the transaction fails (one of the znodes is gone
 * already, say), each remove is sent again on its own, so every caller gets its own answer.
 */
import type { ZkClient } from './zk-client.js';

interface Pending {
  path: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Batches the removes of one client per tick. */
export class RemoveBatch {
  private queue: Pending[] = [];

  /** `client()` is read when the batch is sent (the main client may be replaced after expiry). */
  constructor(private readonly client: () => ZkClient) {}

  /** Removes `path` (any version). Thrown: as ZkClient.remove. */
  remove(path: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.queue.push({ path, resolve, reject }) !== 1) return;
      process.nextTick(() => {
        const batch = this.queue;
        this.queue = [];
        // Every caller gets an answer: a failure before the removes went out (no client) is theirs.
        this.flush(batch).catch((err: unknown) => { for (const p of batch) p.reject(err); });
      });
    });
  }

  private async flush(batch: Pending[]): Promise<void> {
    const client = this.client();
    if (batch.length > 1) {
      try {
        await client.multi(batch.map((p) => ({ op: 'remove', path: p.path, version: -1 })), `removing ${batch.length} lock contenders`);
        for (const p of batch) p.resolve();
        return;
      } catch {
        // each on its own below: the callers get their own answers
      }
    }
    await Promise.all(batch.map((p) => client.remove(p.path).then(p.resolve, p.reject)));
  }
}
