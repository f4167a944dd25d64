/** Test support: the problem lines of a config that must be refused (one per line of its ConfigError). */
import assert from 'node:assert/strict';
import { parseConfig } from '../../lib/config/load.js';
import { ConfigError } from '../../lib/errors.js';

/** Parses `yamlText` as nodepool.yaml and returns its ConfigError's lines; fails the test when it is accepted or fails otherwise. */
export function problemsOf(yamlText: string): string[] {
  try {
    parseConfig(yamlText, 'nodepool.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message.split('\n');
  }
  assert.fail('expected the config to be rejected');
}
