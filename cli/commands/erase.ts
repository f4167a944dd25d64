/**
 * `nodepool erase <provider> [--force]`: forgets a provider: deletes its upload records and
 * node records from the state store. Cloud resources (servers, images) are not touched.
 * Without `--force` it asks on a terminal and refuses otherwise.
 */
import { commandConfig, CommandFailure, EXIT, runCommand, withStore, type CommandContext, type CommandResult } from './shared.js';

/** Options of {@link erase}. */
export interface EraseOptions extends CommandContext {
  provider: string;
  force?: boolean;
  /** Asks a yes/no question; absent when stdin is not a terminal (then erase refuses). */
  confirm?: (question: string) => Promise<boolean>;
}

/** The question asked without `--force`. */
export const eraseQuestion = (provider: string): string => `Erase state for provider ${provider}? [N/y] `;

/** Erases a provider's records; exit 0, 1 when not confirmed, 3 when nothing knows the provider. */
export function erase(opts: EraseOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    return withStore(config, async (store) => {
      const [uploads, nodes] = await Promise.all([store.listUploads({ provider: opts.provider }), store.listNodes({ provider: opts.provider })]);
      const configured = config.providers.some((p) => p.name === opts.provider);
      if (!configured && uploads.length === 0 && nodes.length === 0) {
        throw new CommandFailure(EXIT.notFound, `Provider ${opts.provider} not found in ${config.file} or in the state store`);
      }
      if (!opts.force) {
        out.err(`This deletes ${uploads.length} upload record(s) and ${nodes.length} node record(s) of provider ${opts.provider} from the state store; the cloud resources are not deleted.\n`);
        if (configured) out.err(`warning: ${opts.provider} is still in ${config.file}; a running launcher or builder recreates what it needs\n`);
        const yes = opts.confirm ? await opts.confirm(eraseQuestion(opts.provider)) : false;
        if (!yes) throw new CommandFailure(EXIT.failed, 'Aborting. No data erased.');
      }
      let erasedUploads = 0;
      let erasedNodes = 0;
      for (const u of uploads) if (await store.deleteUpload(u.id)) erasedUploads++;
      for (const n of nodes) if (await store.deleteNode(n.id)) erasedNodes++;
      out.out(`Erased state for provider ${opts.provider}: ${erasedUploads} upload record(s), ${erasedNodes} node record(s). `
        + 'Cloud servers and images were not deleted.\n');
      return EXIT.ok;
    });
  });
}
