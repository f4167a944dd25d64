/**
 * `nodepool config-validate`: loads the config (and the secure file, with `%(NODEPOOL_…)`
 * substitution) with the same loader the daemons use, applies the rules the daemons add at
 * start (gearman-servers) and asks the local resolver about `webapp.listen-address`, and
 * prints every problem, or a one-line summary and, on stderr, each key accepted but not
 * honoured (`warning: file: path: message`). An invalid file exits 2, as a config error does
 * for every command.
 */
import { checkGearmanServers, imageLifecycleMode } from '../../lib/config/gearman-servers.js';
import { listenAddressProblem, type ListenAddressCheckOptions } from '../../lib/config/listen-address.js';
import { loadConfig, type LoadOptions } from '../../lib/config/load.js';
import type { ConfigWarning } from '../../lib/config/schema.js';
import { ConfigError } from '../../lib/errors.js';
import { loadAuthenticators } from '../../lib/web-auth/authenticators.js';
import { EXIT, type CommandResult } from './shared.js';

export type { CommandResult } from './shared.js';

/** One warning as printed: `warning: nodepool.yaml: providers[2].driver: …`. */
export function warningLine(w: ConfigWarning): string {
  return `warning: ${w.file}: ${w.path ? `${w.path}: ` : ''}${w.message}`;
}

/** Validates nodepool.yaml: exit 0 with a summary (and warnings), or 2 listing every problem. */
export async function configValidate(file: string, opts: ListenAddressCheckOptions & LoadOptions = {}): Promise<CommandResult> {
  try {
    const c = loadConfig(file, { ...(opts.env ? { env: opts.env } : {}), ...(opts.secureFile !== undefined ? { secureFile: opts.secureFile } : {}) });
    checkGearmanServers(c);
    const address = await listenAddressProblem(c, opts);
    if (address) throw new ConfigError(file, [address]);
    // The loader is pure: the write API's key files are read here, as the server reads them.
    await loadAuthenticators(c.webapp.auth);
    const mode = imageLifecycleMode(c);
    const lifecycle = c.diskimages.length > 0 && mode !== 'on' ? `; image lifecycle ${mode}` : '';
    return {
      stdout: `${file}: valid (${c.diskimages.length} diskimages, ${c.providers.length} providers, ${c.labels.length} labels${lifecycle})\n`,
      stderr: c.warnings.map((w) => `${warningLine(w)}\n`).join(''),
      exitCode: EXIT.ok,
    };
  } catch (err) {
    if (err instanceof ConfigError) return { stdout: '', stderr: err.message + '\n', exitCode: EXIT.usage };
    throw err;
  }
}
