/**
 * The records the state store keeps. Times are epoch milliseconds. Records are plain JSON
 * values (no classes), so every backend can store them as they are.
 */

/** States of a build (Nodepool's image build states plus `lost`). */
export const BUILD_STATES = ['building', 'ready', 'failed', 'deleting', 'lost'] as const;
export type BuildState = (typeof BUILD_STATES)[number];

/** States of an upload of a build to one provider. */
export const UPLOAD_STATES = ['uploading', 'ready', 'failed', 'deleting'] as const;
export type UploadState = (typeof UPLOAD_STATES)[number];

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
  progress: JobProgress | null;
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
}

/** What a new upload starts with. */
export interface NewUpload {
  buildId: string;
  provider: string;
  imageName: string;
  externalName: string | null;
}

/** Fields of a build that may change. Setting `state` also sets `stateTime` to the store's clock. */
export type BuildPatch = Partial<Pick<BuildRecord,
  'state' | 'builderHostname' | 'builderId' | 'formats' | 'files' | 'reason' | 'progress'>>;

/** Fields of an upload that may change. Setting `state` also sets `stateTime` to the store's clock. */
export type UploadPatch = Partial<Pick<UploadRecord,
  'state' | 'externalId' | 'externalName' | 'format' | 'reason' | 'progress'>>;
