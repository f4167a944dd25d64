import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { configValidate } from '../../../cli/commands/config-validate.js';
import { parseConfig } from '../../../lib/config/load.js';
import { describeValue, Problems, scalarString, string } from '../../../lib/config/schema-kit.js';
import { problemsOf } from '../../support/config-problems.js';


describe('config: empty values, secrets in messages, the webapp address', () => {
  let dir = '';
  before(async () => { dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-config-')); });
  after(() => rm(dir, { recursive: true, force: true }));

  it('refuses `providers:` with nothing under it (it must not read as "no providers" and delete every image)', () => {
    assert.deepEqual(problemsOf('diskimages: []\nproviders:\n'), [
      'nodepool.yaml: providers: expected a list of a provider mapping, got an empty value (leave the key out for the default)',
    ]);
    assert.deepEqual(problemsOf('providers: null\nlabels: ~\n'), [
      'nodepool.yaml: labels: expected a list of a mapping, got an empty value (leave the key out for the default)',
      'nodepool.yaml: providers: expected a list of a provider mapping, got an empty value (leave the key out for the default)',
    ]);
    assert.deepEqual(problemsOf('diskimages:\n  - name: d\n    env-vars:\n'), [
      'nodepool.yaml: diskimages[0].env-vars: expected a mapping of a string or number, got an empty value (leave the key out for the default)',
    ]);
    // Leaving the key out still gives the default.
    assert.deepEqual(parseConfig('diskimages: []\n', 'nodepool.yaml').providers, []);
  });

  it('never prints the value found at a secret key path, only its kind', () => {
    assert.equal(describeValue(12345678, 'clouds.c1.auth.password'), 'a number');
    assert.equal(describeValue('hunter22', 'x.application_credential_secret'), 'a string');
    assert.equal(describeValue('two', 'providers[0].pools[0].max-servers'), '"two"');
    const p = new Problems();
    string({ pattern: /^x/ }).parse('Env-Secret-3', 'diskimages[0].env-vars.DIB_PASSWORD', p);
    scalarString().parse(['Env-Secret-4'], 'diskimages[0].env-vars.MY_TOKEN', p);
    assert.deepEqual(p.list.map((x) => x.message), ['expected a string matching /^x/, got a string', 'expected a string or number, got a list']);
  });

  it('config-validate fails an unresolvable webapp.listen-address and passes an IP or a known name', async () => {
    const file = path.join(dir, 'nodepool.yaml');
    const write = (address: string): Promise<void> => writeFile(file, `labels: []\nwebapp: {listen-address: ${JSON.stringify(address)}}\n`);
    await write('no-such-host.invalid');
    const bad = await configValidate(file);
    assert.equal(bad.exitCode, 2);
    assert.match(bad.stderr, /^.*nodepool\.yaml: webapp\.listen-address: expected an IP address or a resolvable host name, got "no-such-host\.invalid" \((ENOTFOUND|EAI_AGAIN)/);
    for (const ok of ['127.0.0.1', '::1', 'localhost']) {
      await write(ok);
      const r = await configValidate(file);
      assert.equal(r.exitCode, 0, `${ok}: ${r.stderr}`);
    }
    // A resolver that never answers is a problem too, within the bound.
    await write('slow.example');
    const slow = await configValidate(file, { lookup: () => new Promise(() => undefined), timeoutMs: 50 });
    assert.equal(slow.exitCode, 2);
    assert.match(slow.stderr, /no answer within 50 ms/);
  });
});
