import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { validationAllocation, type NodeRecord } from '../../../../lib/store/models.js';
import {
  bootFailure, commandFailure, deleterVerdictWithValidation, isValidationNode, mayReturnToStock, timedOut, validationRequest, validationUser,
} from '../../../../server/launcher/validation-decisions.js';

function node(over: Partial<NodeRecord> = {}): NodeRecord {
  return {
    id: '0000000009', state: 'ready', stateTime: 0, created: 0, provider: 'vm', pool: 'main', labels: ['small'], launcher: null,
    allocatedTo: null, hostname: null, interfaceIp: '127.0.0.1', publicIpv4: null, publicIpv6: null, privateIpv4: null,
    connectionType: 'ssh', connectionPort: 40022, username: 'debian', hostKeys: [], externalId: 'vm-9', cloud: null, region: null,
    az: null, image: null, resources: null, attributes: {}, reason: null, holdReason: null, holdExpiration: null,
    consumerSession: null, handedOff: false, validatesUpload: null, ...over,
  };
}
const vnode = (over: Partial<NodeRecord> = {}): NodeRecord =>
  node({ validatesUpload: '0000000004', allocatedTo: validationAllocation('0000000004'), image: '0000000004', ...over });

describe('validation nodes and the deleter', () => {
  it('tells validation nodes by the upload they validate (records without the field are not)', () => {
    assert.equal(isValidationNode(vnode()), true);
    assert.equal(isValidationNode(node()), false);
    const { validatesUpload: _omit, ...old } = node();
    assert.equal(isValidationNode(old as NodeRecord), false);
  });

  it('deletes an unlocked validation node in any state but hold, even ready (it is never stock)', () => {
    for (const state of ['init', 'building', 'ready', 'failed', 'deleting', 'in-use', 'used'] as const) {
      assert.equal(deleterVerdictWithValidation(vnode({ state }), true), 'delete', state);
    }
    assert.equal(deleterVerdictWithValidation(vnode({ state: 'hold' }), true), 'keep');
  });

  it('keeps the usual verdicts for other nodes', () => {
    assert.equal(deleterVerdictWithValidation(node({ state: 'ready' }), true), 'keep');
    assert.equal(deleterVerdictWithValidation(node({ state: 'used' }), true), 'delete');
  });

  it('never gives a validation node back to stock', () => {
    assert.equal(mayReturnToStock(vnode()), false);
    assert.equal(mayReturnToStock(node({ allocatedTo: '100-0000000001' })), true);
  });
});

describe('the validation launch', () => {
  it('hands the driver a request-shaped record named after the upload, never a stored request id', () => {
    const r = validationRequest('0000000004', 'vm', 'small', 5);
    assert.equal(r.id, 'validation-0000000004');
    assert.deepEqual([r.labels, r.reuse, r.provider, r.state], [['small'], false, 'vm', 'pending']);
  });

  it('logs in as the spec user, else the node user', () => {
    assert.equal(validationUser({ username: 'root' }, node()), 'root');
    assert.equal(validationUser({ username: null }, node()), 'debian');
    assert.equal(validationUser({ username: null }, node({ username: null })), null);
  });
});

describe('validation failure reasons', () => {
  it('passes a command that exited 0', () => {
    assert.equal(commandFailure('true', { exitCode: 0, timedOut: false, outputTail: 'x' }, 600), null);
  });

  it('names the command, its exit status and its output tail', () => {
    assert.equal(commandFailure('test -e /nonexistent', { exitCode: 1, timedOut: false, outputTail: 'nope\n' }, 600),
      'validation: command "test -e /nonexistent" exited 1; output tail:\nnope');
    assert.equal(commandFailure('x', { exitCode: 2, timedOut: false, outputTail: '' }, 600), 'validation: command "x" exited 2');
  });

  it('says when ssh itself failed, and when the command outlived the deadline', () => {
    assert.match(commandFailure('x', { exitCode: 255, timedOut: false, outputTail: 'Host key verification failed.' }, 600) ?? '',
      /ssh exited 255 .*host key.*Host key verification failed\./s);
    assert.match(commandFailure('sleep 999', { exitCode: null, timedOut: true, outputTail: '' }, 60) ?? '', /^validation timed out: .* 60 s deadline$/);
  });

  it('carries the launch reason (with its console tail) for a node that did not boot', () => {
    assert.equal(bootFailure({ id: '0000000009', reason: 'VM did not answer SSH\n--- console tail ---\nNo bootable device.' }),
      'validation: node 0000000009 did not boot: VM did not answer SSH\n--- console tail ---\nNo bootable device.');
    assert.equal(timedOut(600, 'node 1 was still booting'), 'validation timed out: node 1 was still booting at the 600 s deadline');
  });
});
