/**
 * `nodepool config-validate`: loads the config with the same loader the daemons use, applies
 * the rules the daemons add at start (gearman-servers) and asks the local resolver about
 * `webapp.listen-address`, and prints every problem, or a one-line summary. An invalid file
 * exits 2, as a config error does for every command.
 */
import { checkGearmanServers } from '../../lib/config/gearman-servers.js';
import { listenAddressProblem, type ListenAddressCheckOptions } from '../../lib/config/listen-address.js';
import { loadConfig } from '../../lib/config/load.js';
import { ConfigError } from '../../lib/errors.js';
import { EXIT, type CommandResult } from './shared.js';

export type { CommandResult } from './shared.js';

/** Validates nodepool.yaml: exit 0 with a summary, or 2 listing every problem. */
export async function configValidate(file: string, opts: ListenAddressCheckOptions = {}): Promise<CommandResult> {
  try {
    const c = loadConfig(file);
    checkGearmanServers(c);
    const address = await listenAddressProblem(c, opts);
    if (address) throw new ConfigError(file, [address]);
    return {
      stdout: `${file}: valid (${c.diskimages.length} diskimages, ${c.providers.length} providers, ${c.labels.length} labels)\n`,
      stderr: '',
      exitCode: EXIT.ok,
    };
  } catch (err) {
    if (err instanceof ConfigError) return { stdout: '', stderr: err.message + '\n', exitCode: EXIT.usage };
    throw err;
  }
}
