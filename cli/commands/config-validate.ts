/**
 * `nodepool config-validate`: loads the config with the same loader the daemons use and
 * prints every problem, or a one-line summary. An invalid file is this command's failure
 * (exit 1), not a usage error.
 */
import { loadConfig } from '../../lib/config/load.js';
import { ConfigError } from '../../lib/errors.js';
import type { CommandResult } from './shared.js';

export type { CommandResult } from './shared.js';

/** Validates nodepool.yaml: exit 0 with a summary, or 1 listing every problem. */
export function configValidate(file: string): CommandResult {
  try {
    const c = loadConfig(file);
    return {
      stdout: `${file}: valid (${c.diskimages.length} diskimages, ${c.providers.length} providers, ${c.labels.length} labels)\n`,
      stderr: '',
      exitCode: 0,
    };
  } catch (err) {
    if (err instanceof ConfigError) return { stdout: '', stderr: err.message + '\n', exitCode: 1 };
    throw err;
  }
}
