/**
 * SharedWork: one run of a piece of work per key, awaited by every caller that asks for the
 * same key while it runs (two upload jobs needing the same build converted to the same
 * format share one qemu-img). Each caller brings its own AbortSignal: a caller whose signal
 * aborts stops waiting at once, but the work itself is aborted only when every caller waiting
 * on it has aborted, so one job's abort never fails another job's shared conversion.
 */
import { AbortedError } from '../../lib/errors.js';

interface Entry {
  controller: AbortController;
  promise: Promise<void>;
  waiters: number;
  /** Every waiter aborted: the work is being stopped; a new caller starts a new run after it. */
  cancelled: boolean;
}

const noop = (): void => undefined;

/** Shared runs of keyed work, each cancelled only when all its waiters are gone. */
export class SharedWork {
  private readonly running = new Map<string, Entry>();

  /** Callers waiting on `key`'s work now (0 when none runs). */
  waiters(key: string): number {
    return this.running.get(key)?.waiters ?? 0;
  }

  /**
   * Waits for `key`'s work, starting it with `start` (given the work's own signal) unless it
   * runs already; `started` is true for the caller that started it. Rejects with the work's
   * error, or, when `signal` aborts first, with an {@link AbortedError} naming `what` (the work
   * goes on while others wait on it).
   */
  run(key: string, signal: AbortSignal, start: (signal: AbortSignal) => Promise<void>, what = key): { started: boolean; done: Promise<void> } {
    if (signal.aborted) return { started: false, done: Promise.reject(aborted(what, signal)) };
    let entry = this.running.get(key);
    const started = !entry || entry.cancelled;
    if (!entry || entry.cancelled) {
      // A cancelled run still winding down (its files being removed) is let finish first.
      const before = entry ? entry.promise.then(noop, noop) : Promise.resolve();
      const controller = new AbortController();
      const e: Entry = { controller, waiters: 0, cancelled: false, promise: before };
      e.promise = before.then(() => {
        if (controller.signal.aborted) throw controller.signal.reason;
        return start(controller.signal);
      });
      e.promise.finally(() => {
        if (this.running.get(key) === e) this.running.delete(key);
      }).catch(noop);
      this.running.set(key, e);
      entry = e;
    }
    const e = entry;
    e.waiters += 1;
    const done = new Promise<void>((resolve, reject) => {
      let left = false;
      const leave = (): boolean => {
        if (left) return false;
        left = true;
        e.waiters -= 1;
        signal.removeEventListener('abort', onAbort);
        return true;
      };
      const onAbort = (): void => {
        if (!leave()) return;
        if (e.waiters === 0 && !e.cancelled) {
          // the last waiter left: nobody wants the result any more
          e.cancelled = true;
          e.controller.abort(aborted(what, signal));
        }
        reject(aborted(what, signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      e.promise.then(
        () => { if (leave()) resolve(); },
        (err: unknown) => { if (leave()) reject(err instanceof Error ? err : new Error(String(err))); },
      );
    });
    return { started, done };
  }
}

function aborted(what: string, signal: AbortSignal): AbortedError {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'aborted';
  return new AbortedError(`stopped waiting for ${what}: ${reason}`, { cause: signal.reason });
}
