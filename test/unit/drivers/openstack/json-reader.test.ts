import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cloudSaid, JsonReader } from '../../../../lib/drivers/openstack/json-reader.js';
import { CloudError } from '../../../../lib/errors.js';
import { processSecrets, SecretRegistry } from '../../../../lib/redact.js';

function failure(body: string, read: (r: JsonReader) => unknown = () => undefined): string {
  try {
    read(JsonReader.parse({ call: 'Keystone POST /v3/auth/tokens', status: 201, body }));
  } catch (err) {
    assert.ok(err instanceof CloudError, String(err));
    return err.message;
  }
  assert.fail('expected a CloudError');
}

describe('json-reader quotes of what a cloud said', () => {
  after(() => processSecrets.clear());

  it('quotes a short excerpt with secrets redacted and bounded', () => {
    const s = new SecretRegistry();
    s.add('Quote-Secret-5');
    const said = cloudSaid(`echo ${'x'.repeat(50)} Quote-Secret-5 ${'y'.repeat(400)}`, s);
    assert.ok(!said.includes('Quote-Secret-5'), said);
    assert.ok(said.length < 230, `bounded: ${said.length}`);
    assert.equal(cloudSaid('  '), 'cloud said nothing (empty body)');
  });

  it('names a bad secret field without its value, and redacts the quoted answer', () => {
    processSecrets.add('Proc-Secret-77');
    const notJson = failure('{"auth": {"password": "Proc-Secret-77"');
    assert.match(notJson, /is not JSON; cloud said: /);
    assert.ok(!notJson.includes('Proc-Secret-77'), notJson);
    const wrongType = failure(JSON.stringify({ token: { secret: 12345678, expires_at: 5 } }), (r) => r.obj('token').str('secret'));
    assert.match(wrongType, /field "token\.secret": expected string, got a number; cloud said: /);
    assert.ok(!wrongType.includes('12345678'), wrongType);
  });
});
