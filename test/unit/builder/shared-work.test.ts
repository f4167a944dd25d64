import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AbortedError } from '../../../lib/errors.js';
import { SharedWork } from '../../../workers/builder/shared-work.js';
import { deferred } from '../../support/test-log.js';

/** Work that ends when released, or rejects when its own signal aborts. */
function gatedWork(): { run: (signal: AbortSignal) => Promise<void>; release: () => void; starts: number; aborted: number } {
  const gate = deferred();
  const w = {
    starts: 0, aborted: 0, release: () => gate.resolve(),
    run: (signal: AbortSignal): Promise<void> => {
      w.starts += 1;
      return new Promise<void>((resolve, reject) => {
        signal.addEventListener('abort', () => { w.aborted += 1; reject(new Error('killed')); }, { once: true });
        void gate.promise.then(resolve);
      });
    },
  };
  return w;
}

describe('SharedWork', () => {
  it('runs the work once for every waiter of a key', async () => {
    const shared = new SharedWork();
    const w = gatedWork();
    const a = shared.run('k', new AbortController().signal, w.run);
    const b = shared.run('k', new AbortController().signal, w.run);
    assert.deepEqual([a.started, b.started, shared.waiters('k')], [true, false, 2]);
    w.release();
    await Promise.all([a.done, b.done]);
    assert.equal(w.starts, 1);
    assert.equal(shared.waiters('k'), 0);
  });

  it('keeps the work running for the others when one waiter aborts, and says so to that waiter', async () => {
    const shared = new SharedWork();
    const w = gatedWork();
    const ca = new AbortController();
    const a = shared.run('k', ca.signal, w.run, 'the conversion');
    const b = shared.run('k', new AbortController().signal, w.run);
    ca.abort(new Error('connection lost'));
    await assert.rejects(a.done, (err: Error) => err instanceof AbortedError && err.message === 'stopped waiting for the conversion: connection lost');
    assert.equal(w.aborted, 0);
    w.release();
    await b.done;
    assert.equal(w.aborted, 0);
  });

  it('aborts the work when its last waiter aborts, and a later caller starts it again after it has ended', async () => {
    const shared = new SharedWork();
    const first = gatedWork();
    const ca = new AbortController();
    const cb = new AbortController();
    const a = shared.run('k', ca.signal, first.run);
    const b = shared.run('k', cb.signal, first.run);
    await new Promise(setImmediate); // the work starts one tick after the first caller
    assert.equal(first.starts, 1);
    ca.abort();
    cb.abort();
    await assert.rejects(a.done, AbortedError);
    await assert.rejects(b.done, AbortedError);
    assert.equal(first.aborted, 1);
    const second = gatedWork();
    const c = shared.run('k', new AbortController().signal, second.run);
    assert.equal(c.started, true);
    second.release();
    await c.done;
    assert.equal(second.starts, 1);
  });

  it('passes the work\'s own failure to every waiter', async () => {
    const shared = new SharedWork();
    const a = shared.run('k', new AbortController().signal, () => Promise.reject(new Error('qemu-img exit 1')));
    const b = shared.run('k', new AbortController().signal, () => Promise.resolve());
    await assert.rejects(a.done, /qemu-img exit 1/);
    await assert.rejects(b.done, /qemu-img exit 1/);
  });

  it('refuses at once a caller whose signal is already aborted, starting nothing', async () => {
    const shared = new SharedWork();
    const c = new AbortController();
    c.abort(new Error('gone'));
    let started = false;
    const r = shared.run('k', c.signal, () => { started = true; return Promise.resolve(); });
    await assert.rejects(r.done, AbortedError);
    assert.equal(started, false);
  });
});
