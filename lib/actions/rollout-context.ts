/**
 * What the image rollout actions (pin, revoke, unrevoke, promote) share: their context, and
 * finding the build they name as a record or a refusal (unknown, or a corrupt record, which
 * only `nodepool image-delete` can remove).
 */
import type { Config } from '../config/schema.js';
import { CorruptRecordError } from '../errors.js';
import type { BuildRecord } from '../store/models.js';
import type { Store } from '../store/store.js';
import { refuse, type Refused } from './action-result.js';

/** What the rollout actions need. */
export interface RolloutActionContext {
  store: Store;
  /** The diskimages and providers named, and the node deletions' session (`launcher.session-ttl`). */
  config: Config;
  /** The clock of the rollout decisions written on uploads (default Date.now). */
  now?: () => number;
}

/**
 * Why a rollout action (`verb`: pin, promote, revoke, unrevoke) cannot act on `build`: it failed
 * (it has no upload to act on), or it is being deleted; undefined when neither.
 */
export function unservableBuild(build: BuildRecord, verb: string): Refused<'wrong-state'> | undefined {
  if (build.state === 'failed') {
    return refuse('wrong-state', `Build ${build.id} failed${build.reason ? ` (${build.reason})` : ''}; a failed build has no upload to ${verb}`);
  }
  if (build.state === 'deleting') return refuse('wrong-state', `Build ${build.id} is being deleted; it cannot be ${verb === 'pin' ? 'pinned' : `${verb}d`}`);
  return undefined;
}

/** Build `id`, or an `unknown-build` refusal, or `wrong-state` for a corrupt record. */
export async function findBuild(store: Store, id: string): Promise<BuildRecord | Refused<'unknown-build' | 'wrong-state'>> {
  try {
    return await store.getBuild(id) ?? refuse('unknown-build', `Build ${id} not found`);
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    return refuse('wrong-state', `Build ${id}'s record is corrupt (${err.reason}); nodepool image-delete ${id} removes it`);
  }
}
