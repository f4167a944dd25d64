/**
 * Operator action: request a build of a diskimage (`nodepool image-build`). The server's image
 * lifecycle starts it on its next pass. Refused for an unknown or paused diskimage, and while a
 * build of it is in progress (a request made now would start a second full build as soon as
 * that one ends).
 */
import type { Config } from '../config/schema.js';
import type { BuildRecord, BuildRequest } from '../store/models.js';
import type { Store } from '../store/store.js';
import { progressPercent } from '../status/progress.js';
import { refuse, type ActionResult } from './action-result.js';
import { findDiskimage, isRefused } from './config-lookup.js';

/** What {@link requestImageBuild} needs. */
export interface ImageBuildContext {
  store: Store;
  config: Config;
}

/** The answer of {@link requestImageBuild}. */
export type ImageBuildResult = ActionResult<{ diskimage: string; request: BuildRequest }, 'unknown-diskimage' | 'paused' | 'in-progress'>;

/** Records a build request for `diskimage`. */
export async function requestImageBuild({ store, config }: ImageBuildContext, args: { diskimage: string }): Promise<ImageBuildResult> {
  const diskimage = findDiskimage(config, args.diskimage);
  if (isRefused(diskimage)) return diskimage;
  const name = diskimage.name;
  if (diskimage.pause) return refuse('paused', `Diskimage ${name} is paused (pause: true in ${config.file})`);
  const pause = (await store.listPauses()).find((p) => p.diskimage === name && p.provider === null);
  if (pause) {
    return refuse('paused', `Diskimage ${name} is paused${pause.reason ? ` (${pause.reason})` : ''}; nodepool image-unpause ${name} resumes its builds`);
  }
  const running = (await store.listBuilds({ diskimage: name, states: ['building'] })).at(-1);
  if (running) return refuse('in-progress', `Diskimage ${name} has a build in progress (${describeRunning(running)}); no new build requested`);
  const request = await store.requestBuild(name);
  return { ok: true, diskimage: name, request, message: `Build of ${name} requested` };
}

/** `<id> on <builder>, <n>%` for the build-in-progress refusal. */
function describeRunning(b: BuildRecord): string {
  const pct = progressPercent(b.progress);
  return [b.id, b.builderHostname ? ` on ${b.builderHostname}` : '', pct !== null ? `, ${pct}%` : ''].join('');
}
