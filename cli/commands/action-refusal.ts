/**
 * How the CLI adapters turn an operator action's refusal (lib/actions/action-result.ts) into
 * what `runCommand` prints and exits with: its sentence on stderr, and the documented exit code.
 */
import { isUnknown, type ActionResult, type Refusal, type Refused } from '../../lib/actions/action-result.js';
import type { Config } from '../../lib/config/schema.js';
import type { Store } from '../../lib/store/store.js';
import { CommandFailure } from '../../lib/errors.js';
import {
  commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';

/** The exit code of a refused action: unknown → 3, bad argument → 2, interrupted → 130, else 1. */
export function refusalExitCode(refusal: Refusal): number {
  if (isUnknown(refusal)) return EXIT.notFound;
  if (refusal === 'invalid-argument') return EXIT.usage;
  if (refusal === 'interrupted') return EXIT.interrupted;
  return EXIT.failed;
}

/** The answer of an action when it was not refused. Thrown: CommandFailure with the refusal's message and exit code. */
export function settled<T extends object>(x: T): Exclude<T, Refused> {
  if ((x as Partial<Refused>).ok === false) {
    const r = x as unknown as Refused;
    throw new CommandFailure(refusalExitCode(r.refusal), r.message);
  }
  return x as Exclude<T, Refused>;
}

/**
 * Runs an action on the configured store and prints its message on stdout and its warnings on
 * stderr; exit 0, or the refusal's sentence and exit code.
 */
export function runActionCommand(opts: CommandContext,
  action: (ctx: { store: Store; config: Config }) => Promise<ActionResult<{ warnings?: readonly string[] }>>): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const { message, warnings } = settled(await withStore(config, (store) => action({ store, config })));
    out.out(`${message}\n`);
    for (const w of warnings ?? []) out.err(`warning: ${w}\n`);
    return EXIT.ok;
  });
}
