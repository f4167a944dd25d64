/**
 * The image records the state store keeps: builds, uploads and their states (with what Nodepool
 * 11 is told of each), rollout, pins, revocations, pauses and operators' requests. Times are
 * epoch milliseconds; records are plain JSON values.
 */

/**
 * States of a build (Nodepool's image build states plus `lost`: ready, but no builder holds its
 * files any more; its uploads still serve).
 */
export const BUILD_STATES = ['building', 'ready', 'failed', 'deleting', 'lost'] as const;
export type BuildState = (typeof BUILD_STATES)[number];

/** Nodepool 11's build states (`ImageBuild.VALID_STATES`): all its `state` field may hold. */
export const NODEPOOL_BUILD_STATES = ['building', 'ready', 'deleting', 'failed'] as const;
export type NodepoolBuildState = (typeof NODEPOOL_BUILD_STATES)[number];

/**
 * What Nodepool 11 is told of each build state (issue 31): a lost build is `ready` to it, since
 * its uploads serve launches (Nodepool's builder only uploads builds whose files it holds).
 */
export const NODEPOOL_BUILD_STATE: Readonly<Record<BuildState, NodepoolBuildState>> = {
  building: 'building', ready: 'ready', failed: 'failed', deleting: 'deleting', lost: 'ready',
};

/**
 * States of an upload of a build to one provider: `uploading → validating → ready | failed →
 * deleting`; `validating` only when the provider diskimage has `validate:`.
 */
export const UPLOAD_STATES = ['uploading', 'validating', 'ready', 'failed', 'deleting'] as const;
export type UploadState = (typeof UPLOAD_STATES)[number];

/** Nodepool 11's upload states (`ImageUpload.VALID_STATES`): all its `state` field may hold. */
export const NODEPOOL_UPLOAD_STATES = ['uploading', 'ready', 'deleting', 'failed'] as const;
export type NodepoolUploadState = (typeof NODEPOOL_UPLOAD_STATES)[number];

/**
 * What Nodepool 11 is told of each upload state (issue 31): an upload being validated is still
 * `uploading` to it, so no Nodepool launcher boots it before the validation passed.
 */
export const NODEPOOL_UPLOAD_STATE: Readonly<Record<UploadState, NodepoolUploadState>> = {
  uploading: 'uploading', validating: 'uploading', ready: 'ready', failed: 'failed', deleting: 'deleting',
};

/** One image file a builder holds, as the build's WORK_COMPLETE reported it. */
export interface ImageFileInfo {
  format: string;
  size: number;
  sha256: string;
}

/** Progress of a running job, from its WORK_STATUS. */
export interface JobProgress {
  numerator: number;
  denominator: number;
}

/**
 * Progress of a running upload: `numerator` and `denominator` are the bytes sent and the
 * file's size (the builder's WORK_STATUS). The server adds the rate and the time of the
 * sample; records written before it did have only the fraction, so both are optional.
 */
export interface UploadProgress extends JobProgress {
  /** Bytes per second over the last few seconds of samples; null until two samples are known. */
  rate?: number | null;
  /** When the server received this sample (epoch ms, the server's clock). */
  sampledAt?: number;
}

/** A diskimage build: `<diskimage>-<10-digit sequence>`, never reused. */
export interface BuildRecord {
  id: string;
  diskimage: string;
  state: BuildState;
  /** When `state` last changed. */
  stateTime: number;
  created: number;
  /** Hostname of the builder that holds (or builds) the files; null until known. */
  builderHostname: string | null;
  /** The builder's persistent id (builder_id.txt); null until known. */
  builderId: string | null;
  /** Formats asked for while building; the formats built once ready. */
  formats: string[];
  /** Files the builder reported (empty until ready). */
  files: ImageFileInfo[];
  /** Why the build failed, was lost or is being deleted. */
  reason: string | null;
  /** Last WORK_STATUS of the running build job. */
  progress: JobProgress | null;
  /**
   * Nodepool 11's `username`, `python_path` and `shell_type` of the image (its diskimage's
   * `username`, `python-path`, `shell-type`), as the record says; absent when it says nothing
   * (Nodepool would read `zuul` and the legacy `/usr/bin/python2`: not applied here).
   */
  username?: string | null;
  pythonPath?: string | null;
  shellType?: string | null;
  /**
   * Where the builder holding the build serves its log over HTTP (issue 25 §2,
   * `http://<builder>:<port>/build-logs/<id>`); null or absent when the builder serves none.
   * ZooKeeper: `log_url`, beside Nodepool's fields.
   */
  logUrl?: string | null;
}

/** An upload of a build to one provider. `id` is a 10-digit sequence, unique in the store. */
export interface UploadRecord {
  id: string;
  buildId: string;
  diskimage: string;
  provider: string;
  /** The provider's name for the image (the provider diskimage name). */
  imageName: string;
  state: UploadState;
  stateTime: number;
  created: number;
  /** The cloud's image id, once known. */
  externalId: string | null;
  /** The cloud's image name, chosen before the upload starts. */
  externalName: string | null;
  /** The format that was uploaded. */
  format: string | null;
  reason: string | null;
  progress: UploadProgress | null;
  /** Nodepool 11's image fields, copied from the build when the upload is created (see BuildRecord). */
  username?: string | null;
  pythonPath?: string | null;
  shellType?: string | null;
  /**
   * Rollout (issue 24 §3): launches booted from this upload that came up ready, and that failed
   * (boot, host-key scan, validation of the launch), as every launcher counted them through
   * {@link UploadStore.recordLaunch}; absent reads as 0. ZooKeeper: `launches`, `launch_failures`.
   */
  launches?: number;
  launchFailures?: number;
  /**
   * The rollout decision written for this upload, or absent/null while none was (then
   * lib/rollout/upload-phase.ts derives it from the config: canary or promoted). ZooKeeper:
   * `rollout_state`, `rollout_time` (seconds), `rollout_reason`.
   */
  rollout?: UploadRollout | null;
}

/** Where an upload stands in its rollout (issue 24 §3). */
export const ROLLOUT_STATES = ['canary', 'promoted', 'revoked'] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

/** A rollout decision on one upload: when it was taken (epoch ms) and why. */
export interface UploadRollout {
  state: RolloutState;
  time: number;
  reason: string | null;
}

/**
 * A pin (`nodepool image-pin`, issue 24 §1): launches of `diskimage` on `provider` (every
 * provider when null) boot build `buildId`'s upload, whatever is newer; retention keeps it.
 */
export interface PinRecord {
  diskimage: string;
  provider: string | null;
  buildId: string;
  since: number;
  reason: string | null;
}

/**
 * A revoked build (`nodepool image-revoke`, issue 24 §2): no launch boots any upload of it, it
 * is not one of the builds retention keeps, and the lifecycle builds anew as for a missing image.
 */
export interface RevocationRecord {
  diskimage: string;
  buildId: string;
  since: number;
  reason: string | null;
}

/**
 * An operator's request to retry a diskimage's failed uploads to one provider now, without
 * waiting out the retry backoff (`POST /api/upload/<id>/retry`, issue 25 §1).
 */
export interface UploadRetryRequest {
  diskimage: string;
  provider: string;
  requested: number;
}

/** An operator's request for a build of a diskimage (`nodepool image-build`). */
export interface BuildRequest {
  diskimage: string;
  requested: number;
}

/**
 * An operator's pause (`nodepool image-pause`): of a diskimage's builds when `provider` is
 * null, or of its uploads to one provider.
 */
export interface PauseRecord {
  diskimage: string;
  provider: string | null;
  since: number;
  reason: string | null;
}

/** What a new build starts with. */
export interface NewBuild {
  diskimage: string;
  formats: string[];
  /**
   * The build serves the build requests of its diskimage made at or before this time (epoch
   * ms): they are removed in the same transaction that creates it, so a stop or an operator's
   * delete of the build cannot leave a request that starts another build.
   */
  servesRequestsUpTo?: number;
  /**
   * Ids the new build must not take (those builders still advertise files for, e.g. after the
   * state was reset or restored): the sequence moves past them.
   */
  skipIds?: readonly string[];
  /** Nodepool 11's image fields to record (the diskimage's `username`, `python-path`, `shell-type`). */
  username?: string | null;
  pythonPath?: string | null;
  shellType?: string | null;
  /**
   * The build's log token (issue 31 §9; lib/http/build-log-protocol.ts): stored with the record
   * (SQLite `log_token`, ZooKeeper `log_token` beside Nodepool's fields) and read back only
   * through {@link BuildStore.buildLogToken}, never in a BuildRecord, so no list, page or export
   * can show it.
   */
  logToken?: string;
}

/** What a new upload starts with. */
export interface NewUpload {
  buildId: string;
  provider: string;
  imageName: string;
  externalName: string | null;
  /** Nodepool 11's image fields; by default the build's. */
  username?: string | null;
  pythonPath?: string | null;
  shellType?: string | null;
}

/** Fields of a build that may change. Setting `state` also sets `stateTime` to the store's clock. */
export type BuildPatch = Partial<Pick<BuildRecord,
  'state' | 'builderHostname' | 'builderId' | 'formats' | 'files' | 'reason' | 'progress' | 'logUrl'>>;

/** Fields of an upload that may change. Setting `state` also sets `stateTime` to the store's clock. */
export type UploadPatch = Partial<Pick<UploadRecord,
  'state' | 'externalId' | 'externalName' | 'format' | 'reason' | 'progress' | 'rollout' | 'launches' | 'launchFailures'>>;

/** A launch's result as counted on its upload ({@link UploadStore.recordLaunch}). */
export type LaunchResult = 'success' | 'failure';
