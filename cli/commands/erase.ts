/**
 * `nodepool erase <provider> [--force]`: forgets a provider: deletes its upload records and
 * node records from the state store. Cloud resources (servers, images) are not touched.
 * Without `--force` it asks on a terminal and refuses otherwise. The action is
 * lib/actions/erase.ts `eraseProvider`.
 */
import { eraseProvider, type ErasePlan } from '../../lib/actions/erase.js';
import {
  commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandOutput, type CommandResult,
} from './shared.js';
import { settled } from './action-refusal.js';

/** Options of {@link erase}. */
export interface EraseOptions extends CommandContext {
  provider: string;
  force?: boolean;
  /** Asks a yes/no question; absent when stdin is not a terminal (then erase refuses). */
  confirm?: (question: string) => Promise<boolean>;
}

/** The question asked without `--force`. */
export const eraseQuestion = (provider: string): string => `Erase state for provider ${provider}? [N/y] `;

/** Says what would go, then asks (no terminal: no). */
function confirmOnTerminal(out: CommandOutput, configFile: string, ask: EraseOptions['confirm']): (plan: ErasePlan) => Promise<boolean> {
  return async (plan) => {
    out.err(`This deletes ${plan.uploads} upload record(s) and ${plan.nodes} node record(s) of provider ${plan.provider} from the state store; the cloud resources are not deleted.\n`);
    if (plan.configured) out.err(`warning: ${plan.provider} is still in ${configFile}; a running launcher or builder recreates what it needs\n`);
    return ask ? ask(eraseQuestion(plan.provider)) : false;
  };
}

/** Erases a provider's records; exit 0, 1 when not confirmed, 3 when nothing knows the provider. */
export function erase(opts: EraseOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const confirm = opts.force ? undefined : confirmOnTerminal(out, config.file, opts.confirm);
    const { message } = settled(await withStore(config, (store) => eraseProvider({ store, config }, { provider: opts.provider, confirm })));
    out.out(`${message}\n`);
    return EXIT.ok;
  });
}
