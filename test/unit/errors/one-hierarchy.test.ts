/**
 * Errors in one place (issue 32 §5): every error class the project defines is exported from
 * lib/errors.ts (defined in lib/errors/), is a NodepoolError with a boolean `retryable`, and no
 * production file elsewhere declares an error class. The classes moved there keep their names,
 * messages, parents and retry answers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as errors from '../../../lib/errors.js';
import {
  AbortedError, BadBuildOutputError, BadImageError, BadPayloadError, BodyTooLargeError, BuildCommandFailedError, BuilderError,
  BuildTimeoutError, ClientError, CloudError, CloudHashMismatchError, CommandFailedError, CommandFailure, ConfigError, ConversionError,
  CorruptRecordError, DibFailedError, FetchTimeout, GearmanConnectionError, GearmanProtocolError, GearmanServerError, HostScanError,
  ImageDataConflictError, ImageFileChangedError, InvalidImageDataError, InvalidJobError, LaunchError, NodeLockedError, NodeNotFoundError,
  NodepoolError, NodeStateError, PostUploadHookError, QuotaExceededError, RequestFailedError, RequestNotFoundError, RequestStateError,
  RequestTimeoutError, ResetError, SessionLostError, SnapshotBuildError, StateConflictError, StoreError, TemplateError, UnknownImageError, UploadTimeoutError,
  WaitTimeoutError, ZooKeeperClosedError, ZooKeeperError,
} from '../../../lib/errors.js';

/** The repository's root. */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

type ErrorClass = abstract new (...args: never[]) => Error;

/** One instance of every exported error class, as the code that raises it builds it. */
const SAMPLES: readonly Error[] = [
  new NodepoolError('base'),
  new ConfigError('nodepool.yaml', [{ path: 'providers[0].name', message: 'expected string' }]),
  new BuilderError('no file'),
  new InvalidJobError('bad id'),
  new UnknownImageError('no such diskimage'),
  new BuildCommandFailedError('build failed', { exitCode: 1, signal: null, logPath: '/tmp/x.log' }),
  new DibFailedError('dib failed', { exitCode: 1, signal: null, logPath: '/tmp/x.log' }),
  new BuildTimeoutError('too long'),
  new AbortedError('stopping'),
  new ConversionError('qemu-img failed'),
  new UploadTimeoutError('did not finish'),
  new BadBuildOutputError('empty'),
  new ImageFileChangedError('changed'),
  new CloudHashMismatchError('hash differs'),
  new PostUploadHookError('post-upload-hook x exited 1', { exitCode: 1, signal: null, timedOut: false }),
  new SnapshotBuildError('the setup on build instance build-x exited with 3'),
  new CommandFailedError('qemu-img', 1, 'oops', 'qemu-img exited 1'),
  new CloudError('Nova GET failed', { status: 500 }),
  new ResetError(new CloudError('Glance GET failed: socket hang up')),
  new QuotaExceededError('over quota'),
  new LaunchError('launch failed'),
  new HostScanError('10.0.0.1', 22, 'unreachable', 'no answer'),
  new BadImageError('not a readable qcow2 image'),
  new TemplateError("KeyError: 'x'"),
  new GearmanConnectionError('dropped'),
  new GearmanServerError('ERR_X', 'no'),
  new GearmanProtocolError('bad magic'),
  new BadPayloadError('image-build: expected a JSON object'),
  new StoreError('reading build 1'),
  new StateConflictError('0000000001', 'ready', 'not building'),
  new CorruptRecordError('build', 'x-0000000001', 'bad JSON'),
  new ZooKeeperError('CONNECTION_LOSS', 'lost'),
  new ZooKeeperClosedError('CONNECTION_LOSS', 'closed'),
  new InvalidImageDataError([{ path: 'builds[0].state', message: 'unknown state' }]),
  new ImageDataConflictError('x-0000000001', 'exists'),
  new ClientError('client'),
  new NodeNotFoundError('0000000001'),
  new RequestNotFoundError('100-0000000001'),
  new NodeStateError('0000000001', 'building', 'not releasable'),
  new NodeLockedError('0000000001'),
  new RequestFailedError('100-0000000001', 'no quota'),
  new RequestTimeoutError('100-0000000001', 5000, 'pending'),
  new RequestStateError('100-0000000001', 'pending'),
  new SessionLostError('s1'),
  new WaitTimeoutError('build ready', 5),
  new BodyTooLargeError(65536),
  new FetchTimeout('did not answer within 5 s'),
  new CommandFailure(3, 'no such diskimage'),
];

/** The error classes lib/errors.ts exports (functions whose prototype is an Error's). */
function exportedErrorClasses(): Map<string, ErrorClass> {
  const found = new Map<string, ErrorClass>();
  for (const [name, value] of Object.entries(errors)) {
    if (typeof value === 'function' && (value.prototype as unknown) instanceof Error) found.set(name, value as unknown as ErrorClass);
  }
  return found;
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return sourcesUnder(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

describe('errors in one place', () => {
  it('has a sample of every exported error class, and every one is a NodepoolError with a boolean retryable', () => {
    const classes = exportedErrorClasses();
    assert.ok(classes.size >= 40, `only ${classes.size} error classes exported`);
    const sampled = new Set(SAMPLES.map((e) => e.constructor));
    for (const [name, cls] of classes) {
      assert.ok(sampled.has(cls), `${name} has no sample here`);
      assert.ok(cls === NodepoolError || cls.prototype instanceof NodepoolError, `${name} is not a NodepoolError`);
    }
    for (const e of SAMPLES) {
      assert.ok(e instanceof NodepoolError, `${e.constructor.name} is not a NodepoolError`);
      assert.equal(typeof e.retryable, 'boolean', `${e.name}.retryable`);
      assert.equal(e.name, e.constructor.name);
    }
  });

  it('keeps the names, messages, parents and retry answers of the classes moved into it', () => {
    const rows: Array<[Error, string, string, ErrorClass, boolean]> = [
      [new BadImageError('not a readable qcow2 image: x'), 'BadImageError', 'not a readable qcow2 image: x', NodepoolError, false],
      [new ResetError(new CloudError('Glance GET /v2/images failed: read ECONNRESET')), 'ResetError', 'Glance GET /v2/images failed: read ECONNRESET', NodepoolError, true],
      [new TemplateError("KeyError: 'request'"), 'TemplateError', "KeyError: 'request'", NodepoolError, false],
      [new WaitTimeoutError('build 0000000001 ready', 250), 'WaitTimeoutError', 'timed out after 250 ms waiting for build 0000000001 ready', NodepoolError, false],
      [new BodyTooLargeError(65536), 'BodyTooLargeError', 'request body over 65536 bytes', NodepoolError, false],
      [new FetchTimeout('did not accept a connection within 5 s'), 'FetchTimeout', 'did not accept a connection within 5 s', NodepoolError, true],
      [new BadPayloadError('image-build: not JSON: "x"'), 'BadPayloadError', 'image-build: not JSON: "x"', NodepoolError, false],
      [new CommandFailure(3, 'Diskimage x is not in nodepool.yaml'), 'CommandFailure', 'Diskimage x is not in nodepool.yaml', NodepoolError, false],
      [new PostUploadHookError('post-upload-hook h exited 1 (no output)', { exitCode: 1, signal: null, timedOut: false }), 'PostUploadHookError', 'post-upload-hook h exited 1 (no output)', BuilderError, false],
      [new InvalidImageDataError([{ path: '', message: 'not an object' }, { path: 'builds[0].id', message: 'missing' }]), 'InvalidImageDataError', 'not valid image data:\n  not an object\n  builds[0].id: missing', StoreError, false],
      [new ImageDataConflictError('x-0000000001', 'build x-0000000001 already exists'), 'ImageDataConflictError', 'build x-0000000001 already exists', StoreError, false],
      [new NodeNotFoundError('0000000007'), 'NodeNotFoundError', 'node 0000000007 not found', ClientError, false],
      [new RequestNotFoundError('100-0000000001'), 'RequestNotFoundError', 'node request 100-0000000001 not found', ClientError, false],
      [new NodeStateError('0000000007', 'building', 'node 0000000007 is building'), 'NodeStateError', 'node 0000000007 is building', ClientError, false],
      [new NodeLockedError('0000000007'), 'NodeLockedError', 'node 0000000007 is locked by another session', ClientError, false],
      [new RequestFailedError('100-0000000001', null), 'RequestFailedError', 'node request 100-0000000001 failed: no reason recorded', ClientError, false],
      [new RequestTimeoutError('100-0000000001', 2500, 'pending'), 'RequestTimeoutError', 'node request 100-0000000001 still pending after 3 s', ClientError, false],
      [new RequestStateError('100-0000000001', 'pending'), 'RequestStateError', 'node request 100-0000000001 is pending, not fulfilled', ClientError, false],
      [new SessionLostError('s1'), 'SessionLostError', 'store session s1 is gone (lapsed or closed)', ClientError, false],
    ];
    for (const [err, name, message, parent, retryable] of rows) {
      assert.equal(err.name, name);
      assert.equal(err.message, message, name);
      assert.ok(err instanceof parent, `${name} is a ${parent.name}`);
      assert.equal(errors.isRetryable(err), retryable, `${name} retryable`);
    }
    assert.equal(new InvalidImageDataError(Array.from({ length: 22 }, (_, i) => ({ path: `builds[${i}]`, message: 'bad' }))).message.split('\n').at(-1), '  … and 2 more problem(s)');
  });

  it('finds no error class declared in a production file outside lib/errors.ts and lib/errors/', () => {
    const names = [...exportedErrorClasses().keys()].join('|');
    const declares = new RegExp(`\\bclass\\s+\\w+(?:<[^>]*>)?\\s+extends\\s+(?:\\w*Error|${names})\\b`);
    const outside = ['lib', 'server', 'workers', 'cli', 'bin']
      .flatMap((dir) => sourcesUnder(path.join(ROOT, dir)).map((file) => path.relative(ROOT, file)))
      .filter((file) => file !== path.join('lib', 'errors.ts') && !file.startsWith(path.join('lib', 'errors') + path.sep))
      .filter((file) => readFileSync(path.join(ROOT, file), 'utf8').split('\n').some((line) => declares.test(line)));
    assert.deepEqual(outside, []);
  });
});
