/**
 * The image-lifecycle planner (pure): one store snapshot in, the actions that move it
 * towards the config and the status to publish out. No I/O, no clock, no randomness; the
 * same snapshot always gives the same plan, actions in a fixed order.
 *
 * The rules run in this order on one working view, so each sees the decisions before it:
 * building builds (fail or resume), reconciliation with what builders advertise (lost,
 * found, strays), new builds and requests, uploads, deletion and retention, local files
 * freed after upload (`delete-after-upload`), then revocations of builds gone. A record
 * gets at most one action per pass.
 */
import type { Plan, PlannerSnapshot } from './actions.js';
import { planBuildingBuilds, planNewBuilds } from './builds.js';
import { planLocalFiles } from './local-files.js';
import { PlanView } from './plan-view.js';
import { reconcile } from './reconcile.js';
import { retention } from './retention.js';
import { forgetRevocations } from './revocations.js';
import { planUploads } from './uploads.js';

/** Decides one pass of the image lifecycle. */
export function plan(snapshot: PlannerSnapshot): Plan {
  const view = new PlanView(snapshot);
  planBuildingBuilds(view);
  reconcile(view);
  const diskimages = planNewBuilds(view);
  const targets = planUploads(view);
  retention(view);
  planLocalFiles(view);
  forgetRevocations(view);
  return { actions: view.actions, diskimages, targets, removals: view.removals, held: view.held };
}
