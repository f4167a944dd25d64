/**
 * `launcher.delete-concurrency`: its default, a valid value, and the problems (with file and
 * key path) of values that are not a whole number from 1 to 1000.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../lib/config/load.js';
import { ConfigError } from '../../../lib/errors.js';

/** The problems a config text is rejected with, one line each ([] when it loads). */
function problemsOf(text: string): string[] {
  try {
    parseConfig(text, 'nodepool.yaml');
    return [];
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message.split('\n');
  }
}

describe('launcher.delete-concurrency', () => {
  it('defaults to 10 deletes in flight beside the other launcher keys', () => {
    const launcher = parseConfig('labels: []', 'nodepool.yaml').launcher;
    assert.equal(launcher.deleteConcurrency, 10);
    assert.equal(launcher.deleteInterval, 5);
  });

  it('takes a whole number from 1 to 1000', () => {
    assert.equal(parseConfig('launcher: {delete-concurrency: 1}', 'nodepool.yaml').launcher.deleteConcurrency, 1);
    assert.equal(parseConfig('launcher: {delete-concurrency: 64, delete-interval: 60}', 'nodepool.yaml').launcher.deleteConcurrency, 64);
    assert.equal(parseConfig('launcher: {delete-concurrency: 1000}', 'nodepool.yaml').launcher.deleteConcurrency, 1000);
  });

  it('rejects zero, fractions, too many and non-numbers, naming the file and the key path', () => {
    for (const bad of ['0', '2.5', '1001', 'many', '-3']) {
      const problems = problemsOf(`launcher: {delete-concurrency: ${bad}}`);
      assert.equal(problems.length, 1, `${bad}: ${problems.join(' / ')}`);
      assert.match(problems[0] ?? '', /^nodepool\.yaml: launcher\.delete-concurrency: expected integer/, bad);
      assert.ok((problems[0] ?? '').includes(`got ${bad === 'many' ? '"many"' : bad}`), problems[0]);
    }
  });
});
