import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { REDACTED, SecretRegistry } from '../../../../lib/redact.js';
import { failureReason, parseUploadAttempt } from '../../../../server/image-lifecycle/job-results.js';

describe('job results: the secrets the server knows never reach a stored reason', () => {
  const secrets = new SecretRegistry();
  secrets.add('Srv-Known-Pw-1');

  it('scrubs a WORK_FAIL text, a WORK_EXCEPTION text and an upload attempt note', () => {
    const fail = failureReason({ type: 'fail', warnings: [Buffer.from('dib exited 1: echo Srv-Known-Pw-1')] }, secrets);
    assert.equal(fail, `dib exited 1: echo ${REDACTED}`);
    const exception = failureReason({ type: 'exception', data: Buffer.from('Error: Srv-Known-Pw-1\n    at x'), warnings: [] }, secrets);
    assert.equal(exception, `builder exception: Error: ${REDACTED}`);
    const note = parseUploadAttempt(Buffer.from(JSON.stringify({ 'upload-attempt': 1, attempts: 3, 'last-error': `${'x'.repeat(490)} Srv-Known-Pw-1` })), secrets);
    assert.ok(note !== undefined && !note.includes('Srv-Known'), note);
    // A bare WORK_FAIL still says what it means.
    assert.match(failureReason({ type: 'fail', warnings: [] }, secrets), /failed without a message/);
  });
});
