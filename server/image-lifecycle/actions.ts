/**
 * What the image-lifecycle planner sees (a snapshot) and decides (actions and status). Pure
 * data: the planner (planner.ts) maps one to the other, the dispatcher (dispatcher.ts)
 * carries the actions out.
 */
import type { Config } from '../../lib/config/schema.js';
import type { DiskimageStatus, UploadTargetStatus } from '../../lib/status/lifecycle-status.js';
import type { BuildRecord, BuildRequest, PauseRecord, PinRecord, RevocationRecord, UploadRecord, UploadRetryRequest } from '../../lib/store/models.js';

/** Everything one planner pass looks at. */
export interface PlannerSnapshot {
  /** Epoch ms. */
  now: number;
  config: Pick<Config, 'diskimages' | 'providers' | 'imageLifecycle'>;
  builds: readonly BuildRecord[];
  uploads: readonly UploadRecord[];
  buildRequests: readonly BuildRequest[];
  pauses: readonly PauseRecord[];
  /**
   * `store.listPins()` (issue 24 §1): a pinned build, and its uploads on the pinned provider (on
   * every provider for a diskimage-wide pin), are never deleted by retention. Absent: none.
   */
  pins?: readonly PinRecord[];
  /**
   * `store.listRevocations()` (issue 24 §2): a revoked build is not one of the builds and uploads
   * retention keeps, and a diskimage whose newest ready build is revoked is built anew. Absent: none.
   */
  revocations?: readonly RevocationRecord[];
  /**
   * `store.listUploadRetries()` (issue 25 §1): a request newer than the newest failed upload of
   * its diskimage and provider skips the retry backoff once. Absent: none.
   */
  uploadRetries?: readonly UploadRetryRequest[];
  /**
   * gearmand's `workers`, merged over every gearmand: function name → client ids
   * (`<hostname>:<builder-id>`) registering it. `null` when no gearmand answered: then
   * nothing is marked lost, failed for lack of a worker, or deleted as a stray.
   */
  registered: ReadonlyMap<string, readonly string[]> | null;
  /**
   * Ready or lost build id → since when (epoch ms) its `image-upload:<id>` has been missing
   * from `registered` in every pass; the dispatcher keeps this across passes. A build is
   * marked lost only after 3 × `image-lifecycle.interval`, so a builder reconnecting after
   * a gearmand restart does not lose its images.
   */
  absentSince: ReadonlyMap<string, number>;
  /**
   * {@link removalKey} → since when (epoch ms) what it names has been missing from the
   * config while records of it remain: the previous plan's `removals`. Its records are
   * deleted only after `image-lifecycle.config-removal-grace`.
   */
  removedSince: ReadonlyMap<string, number>;
  /**
   * Image id → since when (epoch ms) builders have advertised it in every pass while the store
   * had no record of it; the lifecycle keeps this across passes. Such an id is deleted as a
   * stray only after `image-lifecycle.stray-grace`, and not at all while {@link unknownGuard}
   * refuses (server/image-lifecycle/unknown-ids.ts).
   */
  unknownSince: ReadonlyMap<string, number>;
  /**
   * Unknown image ids builders already advertised in a pass where the store had no build
   * record at all (a new, reset or wrong store facing existing builds, or a second installation
   * joining a gearmand): never deleted as strays unless `image-lifecycle.delete-unknown` is set.
   */
  unknownSuspect: ReadonlySet<string>;
  /** Record ids that have a Gearman job or cloud call in flight in this server. */
  inFlight: {
    builds: ReadonlySet<string>;
    uploads: ReadonlySet<string>;
    /** Build ids with an `image-delete` job in flight, and upload ids with a cloud delete in flight. */
    buildDeletes: ReadonlySet<string>;
    uploadDeletes: ReadonlySet<string>;
  };
}

/** Why a build is started; `revoked`: the newest ready build is revoked, built anew as for a missing image. */
export type BuildReason = 'missing' | 'revoked' | 'age' | 'format' | 'request';

/** One thing to do. The dispatcher re-checks the record's state before acting. */
export type Action =
  /**
   * Create a build record and submit `image-build:<diskimage>` with the id as unique; the
   * record's creation removes the build requests made up to `servesRequestsUpTo`.
   */
  | { type: 'start-build'; diskimage: string; formats: string[]; reason: BuildReason; servesRequestsUpTo?: number; baseImage?: string }
  /** A `building` record without a job here (server restart, gearmand restart): resubmit with the same unique. */
  | { type: 'resume-build'; buildId: string; baseImage?: string }
  /** Mark a build failed (timed out, its builder disappeared, its diskimage left the config). */
  | { type: 'fail-build'; buildId: string; reason: string }
  /**
   * Create an upload record and submit `image-upload:<build>` to the provider; then remove the
   * operator's retry request of the target made up to `servesRetry.requested`.
   */
  | { type: 'start-upload'; buildId: string; provider: string; imageName: string; servesRetry?: { diskimage: string; requested: number } }
  /** An `uploading` record without a job here: resubmit with the same unique and upload id. */
  | { type: 'resume-upload'; uploadId: string }
  | { type: 'fail-upload'; uploadId: string; reason: string }
  /**
   * Mark a `validating` upload failed (its target left the config, or no launcher finished its
   * validation in time) and delete its image in the provider; the record stays, with the reason.
   */
  | { type: 'fail-validation'; uploadId: string; reason: string }
  /** A `validating` upload whose target no longer has `validate:`: ready as it is. */
  | { type: 'skip-validation'; uploadId: string; reason: string }
  /** Mark `deleting` (if not yet), delete the cloud image (if any), then remove the record. */
  | { type: 'delete-upload'; uploadId: string; reason: string }
  /**
   * Mark `deleting` (if not yet); submit `image-delete:<id>` when a builder registers it and
   * remove the record after its WORK_COMPLETE, or remove it at once when nobody does.
   */
  | { type: 'delete-build'; buildId: string; reason: string }
  /**
   * `delete-after-upload`: submit `image-delete:<id>` with `formats` to the builder holding the
   * ready build, so it deletes those local files (and their checksums) and keeps the build;
   * the record's `files` then lists what remains.
   */
  | { type: 'delete-formats'; buildId: string; formats: string[]; kept: string[] }
  /** A ready build whose files no builder advertises any more. */
  | { type: 'mark-lost'; buildId: string }
  /** A lost build whose `image-upload:<id>` is registered again: back to ready. */
  | { type: 'mark-found'; buildId: string; holders: string[] }
  /** Builders advertise an id the store does not want: submit `image-delete:<id>`. */
  | { type: 'delete-stray'; imageId: string; holders: string[] }
  /** Remove a request the server will not act on (paused or unknown diskimage) or has served. */
  | { type: 'clear-request'; diskimage: string; requested: number }
  /** Remove the revocation of a build the store holds no record of, nor any upload of (revocations.ts). */
  | { type: 'forget-revocation'; diskimage: string; buildId: string };

/** The planner's answer. */
export interface Plan {
  actions: Action[];
  diskimages: DiskimageStatus[];
  targets: UploadTargetStatus[];
  /** Config removals with records left, and since when: the next snapshot's `removedSince`. */
  removals: Map<string, number>;
  /** Deletions the planner refuses, and why (unknown ids that look like another installation's). */
  held: string[];
}

/** Keys of config removals: a diskimage gone from the config, or a provider that no longer lists a diskimage. */
export const removalKey = {
  diskimage: (name: string): string => `diskimage ${name}`,
  target: (diskimage: string, provider: string): string => `diskimage ${diskimage} on provider ${provider}`,
};
