/**
 * The options, events and activity report of a builder ({@link BaseBuilder}): the shapes its
 * callers (bin/, metrics server, subclasses) pass in and read back.
 */
import type { Config } from '../../lib/config/schema.js';
import type { ReconnectOptions } from '../../lib/gearman/types.js';
import type { Logger } from '../../lib/log.js';
import type { ImageServiceFactory } from '../../lib/drivers/core/driver-hosts.js';
import type { ImageSidecar } from './image-repository.js';

/** Options of {@link BaseBuilder}. */
export interface BaseBuilderOptions {
  config: Config;
  log: Logger;
  imageServices: ImageServiceFactory;
  /** Defaults to os.hostname(). */
  hostname?: string;
  /** Concurrent builds on this host (default 1) and concurrent uploads/deletes (default 4). */
  buildWorkers?: number;
  uploadWorkers?: number;
  reconnect?: ReconnectOptions;
  qemuImg?: string;
  /** Wait before an upload's second attempt after a cloud error (doubling after; default 5000 ms). */
  uploadRetryDelayMs?: number;
  /** Base environment for build commands and post-upload-hooks (bin/ passes process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * The installation id of the store this builder serves (`--installation`): build jobs naming
   * another are refused (WORK_FAIL). Default: any (jobs without an id, Nodepool 0.3.x's, always).
   */
  installation?: string;
}

/** Events of a builder, for tests and status. */
export interface BuilderEvents {
  'build:complete': [ImageSidecar];
  'build:failed': [{ imageId: string; error: Error }];
  'upload:complete': [{ imageId: string; provider: string; externalId: string }];
  'image:deleted': [{ imageId: string }];
}

/** What a builder is doing now (its metrics port shows it). */
export interface BuilderActivity {
  builds: number;
  /** Upload jobs running (deletes excluded). */
  uploads: number;
  buildWorkers: number;
  uploadWorkers: number;
  /** Complete images held here. */
  images: number;
}
