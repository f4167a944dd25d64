/**
 * The shape every operator action (lib/actions/*) answers with: a typed result, or a typed
 * refusal saying why nothing (or, for `failed`, not all) was done, with one sentence for the
 * operator. The CLI prints the sentence and maps the refusal to its exit code
 * (cli/commands/shared.ts `refusalExitCode`); the web write API will map it to an HTTP status.
 * Actions never print, exit or read argv.
 */

/**
 * Why an action was refused:
 * - `unknown-*`: the named thing is not in the config or the store;
 * - `invalid-argument`: an argument out of range (a negative expiry, a priority over 999);
 * - `in-progress`: a build or upload is still running (delete it later);
 * - `paused`: the diskimage's builds are paused (by the config or an operator);
 * - `locked`: another session holds the node's lock;
 * - `wrong-state`: the record's state does not allow the action (releasing a building node);
 * - `not-confirmed`: the operator did not confirm a destructive action;
 * - `failed`: the action was tried and failed (a node request the launchers failed, a cloud
 *   deletion that errored), `timed-out` it did not finish in time, `interrupted` it was aborted.
 */
export type Refusal =
  | 'unknown-diskimage' | 'unknown-provider' | 'unknown-build' | 'unknown-upload' | 'unknown-node' | 'unknown-request'
  | 'unknown-label' | 'invalid-argument' | 'in-progress' | 'paused' | 'locked' | 'wrong-state' | 'not-confirmed'
  | 'failed' | 'timed-out' | 'interrupted';

/** A refused action: what kind of refusal, and the sentence that says why. */
export interface Refused<R extends Refusal = Refusal> {
  ok: false;
  refusal: R;
  message: string;
}

/** An action's answer: `{ ok: true, message, ...T }` or a {@link Refused}. */
export type ActionResult<T extends object, R extends Refusal = Refusal> = ({ ok: true; message: string } & T) | Refused<R>;

/** Makes a refusal. */
export function refuse<R extends Refusal>(refusal: R, message: string): Refused<R> {
  return { ok: false, refusal, message };
}

/** Whether a refusal says the named thing does not exist. */
export function isUnknown(refusal: Refusal): boolean {
  return refusal.startsWith('unknown-');
}
