/** Checks of a launcher registration's Nodepool 11 pool fields, the same in every backend. */
import { StoreError } from '../errors.js';
import type { LauncherPatch } from './models.js';
import { checkStanding } from './pool-standing.js';

/** Thrown: StoreError naming `what` when labels are not strings, priority not an integer, paused not a boolean or the standing not whole. */
export function checkLauncherPatch(patch: LauncherPatch, what: string): void {
  const { supportedLabels, priority, paused, standing } = patch;
  if (supportedLabels !== undefined && !(Array.isArray(supportedLabels) && supportedLabels.every((l) => typeof l === 'string'))) {
    throw new StoreError(`${what}: supportedLabels must be a list of strings`);
  }
  if (priority !== undefined && !Number.isInteger(priority)) throw new StoreError(`${what}: priority must be an integer, got ${String(priority)}`);
  if (paused !== undefined && typeof paused !== 'boolean') throw new StoreError(`${what}: paused must be true or false, got ${typeof paused}`);
  if (standing !== undefined) checkStanding(standing, what);
}
