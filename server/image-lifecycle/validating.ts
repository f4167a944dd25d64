/**
 * Planner rule 3b: `validating` uploads (issue 14 §2). The launcher running the upload's
 * provider validates it (server/launcher/validation-worker.ts); the planner only counts it as
 * in progress and resolves what no launcher will: a target that left the config (failed), a
 * target that no longer has `validate:` (ready as it is: the operator dropped the gate), and a
 * validation nobody finished long after its deadline (failed: e.g. no launcher runs the provider).
 */
import type { ValidationSpec } from '../../lib/drivers/contract/validate-config.js';
import type { PlanView, WorkingUpload } from './plan-view.js';

/**
 * When a validation must be over (epoch ms): `timeout` seconds after the upload entered
 * `validating`, so a restarted launcher does not start the clock again. Pure.
 */
export function validationDeadline(enteredValidating: number, spec: Pick<ValidationSpec, 'timeout'>): number {
  return enteredValidating + spec.timeout * 1000;
}

/**
 * How long past its deadline the planner waits before it fails a validation itself: the
 * launcher validating it fails it at the deadline, so this only catches validations no launcher
 * works on. At least 5 minutes, and 3 lifecycle passes.
 */
export function validationGraceMs(intervalSeconds: number): number {
  return Math.max(300_000, 3 * intervalSeconds * 1000);
}

function resolve(view: PlanView, u: WorkingUpload, action: 'fail-validation' | 'skip-validation', reason: string): void {
  if (!view.emit(u, { type: action, uploadId: u.rec.id, reason })) return;
  u.state = action === 'fail-validation' ? 'failed' : 'ready';
  u.stateTime = view.now;
  u.reason = action === 'fail-validation' ? reason : null;
}

/** Rule 3b for one `validating` upload: leaves it to its launcher, or resolves it. */
export function planValidating(view: PlanView, u: WorkingUpload): void {
  const target = u.pair.target;
  if (!target) {
    resolve(view, u, 'fail-validation', `validation: provider ${u.rec.provider} no longer lists ${u.rec.diskimage}`);
    return;
  }
  if (!target.validate) {
    resolve(view, u, 'skip-validation', `provider ${u.rec.provider} no longer validates ${u.rec.diskimage}`);
    return;
  }
  const deadline = validationDeadline(u.stateTime, target.validate);
  if (view.now >= deadline + validationGraceMs(view.lifecycle.interval)) {
    resolve(view, u, 'fail-validation', `validation timed out: no launcher of provider ${u.rec.provider} finished it within ${target.validate.timeout} s`);
  }
}
