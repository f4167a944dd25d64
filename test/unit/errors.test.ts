import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  BuilderError, CloudError, isRetryable, isStoreUnreachable, StoreError, UploadTimeoutError, ZooKeeperClosedError, ZooKeeperError,
} from '../../lib/errors.js';

describe('retryable errors', () => {
  const rows: Array<[string, unknown, boolean]> = [
    ['a cloud call with no answer', new CloudError('Nova GET /servers: socket hang up'), true],
    ['a cloud 5xx', new CloudError('Glance PUT failed with 502', { status: 502 }), true],
    ['a cloud 429', new CloudError('Nova POST failed with 429', { status: 429 }), true],
    ['a cloud rejection (4xx)', new CloudError('Glance PUT failed with 400', { status: 400 }), false],
    ['an aborted cloud call', new CloudError('Glance PUT aborted', { retryable: false }), false],
    ['a cloud error its creator marks retryable', new CloudError('busy', { status: 409, retryable: true }), true],
    ['a ZooKeeper connection loss', new ZooKeeperError('CONNECTION_LOSS', 'lost'), true],
    ['a ZooKeeper session being replaced', new ZooKeeperError('SESSION_EXPIRED', 'expired'), true],
    ['a ZooKeeper "no node"', new ZooKeeperError('NO_NODE', 'gone', '/nodepool/x'), false],
    ['a ZooKeeper store this process closed', new ZooKeeperClosedError('CONNECTION_LOSS', 'closed'), false],
    ['an upload timeout', new UploadTimeoutError('did not finish within 2 s'), false],
    ['another builder error', new BuilderError('no file'), false],
    ['a store error', new StoreError('reading build 1'), false],
    ['an error not ours', new Error('ECONNRESET'), false],
    ['something not an error', 'ECONNRESET', false],
  ];
  for (const [name, err, retryable] of rows) {
    it(`${name}: ${retryable ? 'retryable' : 'not retryable'}`, () => assert.equal(isRetryable(err), retryable));
  }

  it('calls a store unreachable exactly when its ZooKeeper error is retryable', () => {
    for (const [, err] of rows) {
      assert.equal(isStoreUnreachable(err), err instanceof ZooKeeperError && err.retryable);
    }
  });
});
