import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ClientJob } from '../../../lib/gearman/client-job.js';
import type { JobResult } from '../../../lib/gearman/types.js';

const complete: JobResult = { type: 'complete', data: Buffer.from('ok'), warnings: [] };

void describe('ClientJob', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => { unhandled.push(reason); };
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
  });

  void it('a job failed before JOB_CREATED rejects both promises, and neither needs a handler', async () => {
    const failedUnread = new ClientJob('f', false, {});
    failedUnread.fail(new Error('lost'));
    const failedRead = new ClientJob('f', false, {});
    const handle = failedRead.handle;
    failedRead.fail(new Error('lost too'));
    await nextTurn();
    assert.deepEqual(unhandled, []);
    await assert.rejects(failedUnread.result, /lost/);
    await assert.rejects(failedUnread.handle, /lost/);
    await assert.rejects(handle, /lost too/);
    await assert.rejects(failedRead.result, /lost too/);
  });

  void it('resolves the handle whether it is read before or after JOB_CREATED, even if the job fails later', async () => {
    const early = new ClientJob('f', false, {});
    const handle = early.handle;
    assert.equal(early.handle, handle, 'the same promise on every read');
    early.created('H:1');
    early.settle(complete);
    assert.equal(await handle, 'H:1');
    assert.deepEqual(await early.result, complete);

    const late = new ClientJob('f', false, {});
    late.created('H:2');
    late.fail(new Error('connection lost'));
    assert.equal(await late.handle, 'H:2');
    await assert.rejects(late.result, /connection lost/);
  });

  void it('settles once: the first of settle() and fail() wins', async () => {
    const a = new ClientJob('f', false, {});
    a.created('H:3');
    a.settle(complete);
    a.fail(new Error('too late'));
    assert.deepEqual(await a.result, complete);
    const b = new ClientJob('f', false, {});
    b.fail(new Error('first'));
    b.settle(complete);
    await assert.rejects(b.result, /first/);
    await nextTurn();
    assert.deepEqual(unhandled, []);
  });
});
