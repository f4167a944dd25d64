/**
 * Keeps one installation's jobs off another's files (pure). Two installations sharing a
 * gearmand both number their builds from `<diskimage>-0000000001`, so `image-upload:<id>` and
 * `image-delete:<id>` of one can reach the builder holding the other's files of the same id.
 * A job carrying an installation id other than the one the files were built for is refused
 * (WORK_FAIL with this message), never served: no adoption, no deletion of another's files.
 * Files or jobs without an id (built or sent before ids existed, Nodepool 0.3.x) are not checked.
 * A builder bound to an installation (`nodepool-builder --installation`) also refuses a build
 * job naming another ({@link checkServes}): `image-build:<diskimage>` is the same function for
 * every installation on a gearmand, so gearmand may hand one installation's build to another's builder.
 */
import { BuilderError } from '../../lib/errors.js';
import type { ImageSidecar } from './image-repository.js';

/** Thrown unless a builder serving installation `mine` (undefined: any) may take `job` (undefined installation: a Nodepool 0.3.x server's, taken). */
export function checkServes(mine: string | undefined, job: { installation?: string }, what: string, holder: string): void {
  if (mine === undefined || job.installation === undefined || mine === job.installation) return;
  throw new BuilderError(
    `${what} refused: ${holder} serves installation ${mine} (nodepool-builder --installation), `
    + `this job comes from installation ${job.installation} (another nodepool installation on the same gearmand, whose builders take the same image-build function)`,
  );
}

/** Thrown unless `job` may act on the files `sidecar` describes. */
export function checkInstallation(sidecar: Pick<ImageSidecar, 'image-id' | 'installation'>, job: { installation?: string }, what: string, holder: string): void {
  const mine = sidecar.installation;
  if (mine === undefined || job.installation === undefined || mine === job.installation) return;
  throw new BuilderError(
    `${what} of ${sidecar['image-id']} refused: ${holder} holds ${sidecar['image-id']} for installation ${mine}, `
    + `this job comes from installation ${job.installation} (another nodepool installation on the same gearmand, whose ids collide)`,
  );
}
