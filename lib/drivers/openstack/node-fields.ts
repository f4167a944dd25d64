/**
 * The node fields that come with the image a label boots (Nodepool 11: `username`,
 * `python_path`, `shell_type`, `connection_type`, `connection_port`). Pure.
 *
 * - A `cloud-image` label: the cloud-image's keys (`python-path` default `auto`, `username`
 *   and `shell-type` default none).
 * - A `diskimage` label: `python-path` and `shell-type` of the TOP-LEVEL diskimage, as in
 *   Nodepool (defaults `auto` and none). `username`: the provider diskimage's own `username`
 *   (a key of ours, kept) when given, else the top-level diskimage's `username` (Nodepool's
 *   only source), else Nodepool's default `zuul`. Connection type and port are the provider
 *   diskimage's, as in Nodepool.
 */
import type { CountedUpload } from '../../rollout/count-launch.js';
import type { OpenStackCloudImageConfig, OpenStackDiskimageConfig } from './config.js';

/** The node fields an image brings. */
export interface ImageNodeFields {
  username: string | null;
  pythonPath: string;
  shellType: string | null;
  connectionType: string;
  connectionPort: number;
}

/** The image a label boots and the node fields that come with it. */
export interface BootImage extends ImageNodeFields {
  /** Glance id. */
  imageId: string;
  /** Upload id (diskimage) or cloud-image name: the node's `image`. */
  ref: string;
  /** For the `groups` and `nodepool_image_name` metadata. */
  name: string;
  configDrive: boolean | undefined;
  /** The upload the launch's outcome counts on (rollout); null: none (a cloud image, a validation boot). */
  countOn: CountedUpload | null;
}

/**
 * The keys of a top-level diskimage read here. Optional: the top-level schema may not
 * have them (then Nodepool's defaults apply).
 */
export interface TopDiskimageKeys {
  username?: string | null | undefined;
  pythonPath?: string | null | undefined;
  shellType?: string | null | undefined;
}

/** Nodepool's defaults of the top-level diskimage keys. */
export const DISKIMAGE_DEFAULTS = { username: 'zuul', pythonPath: 'auto' } as const;

export function diskimageNodeFields(d: OpenStackDiskimageConfig, top: TopDiskimageKeys | undefined): ImageNodeFields {
  return {
    username: d.username ?? top?.username ?? DISKIMAGE_DEFAULTS.username,
    pythonPath: top?.pythonPath ?? DISKIMAGE_DEFAULTS.pythonPath,
    shellType: top?.shellType ?? null,
    connectionType: d.connectionType,
    connectionPort: d.connectionPort,
  };
}

export function cloudImageNodeFields(ci: OpenStackCloudImageConfig): ImageNodeFields {
  return {
    username: ci.username ?? null,
    pythonPath: ci.pythonPath,
    shellType: ci.shellType ?? null,
    connectionType: ci.connectionType,
    connectionPort: ci.connectionPort,
  };
}
