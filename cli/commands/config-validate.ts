/**
 * `nodepool config-validate`: loads the config with the same loader the daemons use and
 * prints every problem, or a one-line summary.
 */
import { loadConfig } from '../../lib/config/load.js';
import { ConfigError } from '../../lib/errors.js';

/** Output and exit code of a CLI command (bin/ prints and exits). */
export interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

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
