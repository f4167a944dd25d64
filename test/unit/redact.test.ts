import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { createRootLogger } from '../../lib/log.js';
import { isSecretKey, isSecretPath, quoteBody, REDACTED, redactJson, redactKeyValues, SecretRegistry } from '../../lib/redact.js';

describe('redaction of secrets', () => {
  it('knows secret keys by name and key paths that go through one', () => {
    for (const k of ['password', 'Password', 'passwd', 'application_credential_secret', 'client-secret', 'token', 'X-Auth-Token', 'private_key', 'private-key', 'api_key', 'Authorization'])
      assert.ok(isSecretKey(k), k);
    for (const k of ['username', 'project_name', 'auth_url', 'host-key', 'ssl-key', 'max-servers', 'region_name']) assert.ok(!isSecretKey(k), k);
    assert.ok(isSecretPath('clouds.c1.auth.password'));
    assert.ok(isSecretPath('diskimages[0].env-vars.DIB_DEV_USER_PASSWORD'));
    assert.ok(isSecretPath('auth.password[0]'));
    assert.ok(!isSecretPath('token.expires_at'));
    assert.ok(!isSecretPath('providers[1].pools[0].max-servers'));
  });

  it('replaces the values of secret keys in JSON at any depth, walking objects under them', () => {
    const body = { auth: { identity: { methods: ['password'], password: { user: { name: 'u', password: 'hunter22' } } } }, token: 'tok-1', n: [{ secret: 5 }] };
    assert.deepEqual(redactJson(body), { auth: { identity: { methods: ['password'], password: { user: { name: 'u', password: REDACTED } } } }, token: REDACTED, n: [{ secret: REDACTED }] });
  });

  it('replaces key/value secrets in text: JSON (also cut short), YAML, forms, headers and bearer credentials', () => {
    assert.equal(redactKeyValues('{"user": {"password": "hun\\"ter22", "name": "u"'), '{"user": {"password": "<redacted>", "name": "u"');
    assert.equal(redactKeyValues('{"password": "cut-off-sec'), '{"password": "<redacted>"');
    assert.equal(redactKeyValues("password: 12345678\nusername: u"), 'password: <redacted>\nusername: u');
    assert.equal(redactKeyValues('user=u&password=p%40ss&x=1'), 'user=u&password=<redacted>&x=1');
    assert.equal(redactKeyValues('X-Auth-Token: gAAAAB-x_y'), 'X-Auth-Token: <redacted>');
    assert.equal(redactKeyValues('Authorization: Bearer abc.def'), 'Authorization: Bearer <redacted>');
    assert.equal(redactKeyValues("{'application_credential_secret': 'abc'}"), "{'application_credential_secret': '<redacted>'}");
    assert.equal(redactKeyValues('{"password": {"user": {"password": "x1"}}}'), '{"password": {"user": {"password": "<redacted>"}}}');
    assert.equal(redactKeyValues('nothing secret here: 42'), 'nothing secret here: 42');
  });

  it('scrubs every known secret, in its plain, JSON-escaped and URL-encoded forms, longest first', () => {
    const s = new SecretRegistry();
    s.add(12345678);
    s.add('pa"ss w/rd');
    s.add('abc'); // too short to scrub without blanking ordinary words
    s.add(undefined);
    assert.equal(s.scrub('a 12345678 b'), `a ${REDACTED} b`);
    assert.equal(s.scrub('x pa"ss w/rd y pa\\"ss w/rd z pa%22ss%20w%2Frd'), `x ${REDACTED} y ${REDACTED} z ${REDACTED}`);
    assert.equal(s.scrub('abc'), 'abc');
    s.add('12345678901');
    assert.equal(s.scrub('12345678901'), REDACTED);
    // Tokens come and go; the oldest are forgotten, configured secrets never are.
    for (let i = 0; i < 400; i++) s.add(`token-${String(i).padStart(4, '0')}`, { transient: true });
    assert.equal(s.scrub('token-0000 token-0399 12345678'), `token-0000 ${REDACTED} ${REDACTED}`);
    s.clear();
    assert.equal(s.scrub('12345678'), '12345678');
  });

  it('replaces an unquoted value with spaces to the end of the line or the next key', () => {
    assert.equal(redactKeyValues('password: hunter two\nusername: u'), 'password: <redacted>\nusername: u');
    assert.equal(redactKeyValues('password=hunter two user=u'), 'password=<redacted> user=u');
    assert.equal(redactKeyValues('auth: {password: hunter two, user: u}'), 'auth: {password: <redacted>, user: u}');
    assert.equal(redactKeyValues('token: a b c'), 'token: <redacted>');
    assert.ok(!redactKeyValues('secret = correct horse battery staple ; x=1').includes('horse'));
  });

  it('replaces the strings of a list under a secret key, in JSON and in text', () => {
    assert.deepEqual(redactJson({ passwords: ['a-pw', 'b-pw'], tokens: [['t1'], { user: 'u', token: 't2' }], names: ['x'] }),
      { passwords: [REDACTED, REDACTED], tokens: [[REDACTED], { user: 'u', token: REDACTED }], names: ['x'] });
    assert.equal(redactKeyValues('passwords: [a-pw, b pw]\nnames: [x]'), 'passwords: [<redacted>]\nnames: [x]');
    assert.equal(redactKeyValues('{"passwords": ["a-pw", "b-pw"], "n": 1}'), '{"passwords": [<redacted>], "n": 1}');
    // A list of mappings is walked by its own keys, as before.
    assert.equal(redactKeyValues('{"passwords": [{"user": "u", "password": "p1"}]}'), '{"passwords": [{"user": "u", "password": "<redacted>"}]}');
  });

  it('scrubs a secret under 4 characters only where it is a secret key\'s value', () => {
    const s = new SecretRegistry();
    s.add('x7');
    s.add(123);
    assert.equal(s.scrub('password: x7\npasswd=123 "token": "x7" and x7 in a word: ax7b, 1234'),
      `password: ${REDACTED}\npasswd=${REDACTED} "token": "${REDACTED}" and x7 in a word: ax7b, 1234`);
    // Our own messages about the key keep reading.
    assert.equal(s.scrub('password: expected string, got a number'), 'password: expected string, got a number');
    assert.equal(s.scrub('password: x77'), 'password: x77');
  });

  it('quotes a body on one line, redacted and bounded', () => {
    const s = new SecretRegistry();
    s.add('S3cr3t-Echo');
    const echoed = JSON.stringify({ error: { message: 'bad request', request: { auth: { identity: { password: { user: { password: 'S3cr3t-Echo' } } } } } } });
    const q = quoteBody(echoed, { secrets: s });
    assert.ok(!q.includes('S3cr3t-Echo'), q);
    assert.ok(q.includes(REDACTED));
    assert.ok(!quoteBody(`text echo: S3cr3t-Echo\n\nand more`, { secrets: s }).includes('S3cr3t'));
    const long = quoteBody('y'.repeat(1000), { max: 50, secrets: s });
    assert.equal(long, `${'y'.repeat(50)}…`);
  });

  it('keeps known secrets out of every log line, in the message and in metadata', async () => {
    const s = new SecretRegistry();
    s.add('L0g-Secret-9');
    for (const format of ['json', 'pretty'] as const) {
      const out = new PassThrough();
      const chunks: string[] = [];
      out.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
      const log = createRootLogger({ format, stream: out, secrets: s }).child({ component: 'c', cloud: 'x L0g-Secret-9' });
      log.warn('job failed: L0g-Secret-9', { error: 'cloud said: L0g-Secret-9', nested: { list: ['L0g-Secret-9'] } });
      log.error(new Error('thrown with L0g-Secret-9'));
      await new Promise((r) => setImmediate(r));
      const text = chunks.join('');
      assert.ok(text.includes('job failed'), text);
      assert.ok(!text.includes('L0g-Secret-9'), `${format}: ${text}`);
      assert.ok(text.includes(REDACTED), text);
    }
  });
});
