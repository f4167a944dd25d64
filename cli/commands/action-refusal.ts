/**
 * How the CLI adapters turn an operator action's refusal (lib/actions/action-result.ts) into
 * what `runCommand` prints and exits with: its sentence on stderr, and the documented exit code.
 */
import { isUnknown, type Refusal, type Refused } from '../../lib/actions/action-result.js';
import { CommandFailure, EXIT } from './shared.js';

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
