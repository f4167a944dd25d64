/**
 * What nodepool-server publishes for the CLI and the web status, and under which store keys:
 * the image lifecycle's status per diskimage and per upload target (written after every
 * pass) and the server's heartbeat key. The server writes these; lib/status presents them.
 */

/** Why a diskimage is paused. */
export type PausedBy = 'config' | 'operator';

/** Status of one diskimage's builds, for the CLI and the web status. */
export interface DiskimageStatus {
  diskimage: string;
  paused: PausedBy | null;
  /** Set while a needed job cannot run: `no builder registers image-build:<name>`. */
  waiting: string | null;
  /** Consecutive failed builds since the newest ready one. */
  failures: number;
  lastFailure: string | null;
  /** When the next build may start after failures (epoch ms), null without failures. */
  retryAt: number | null;
  /** When the newest ready build reaches rebuild-age (epoch ms), null without one. */
  rebuildAt: number | null;
  /** A build request is pending. */
  requested: boolean;
  /**
   * Set while the newest ready build is revoked (issue 24 §2), so a new one is built as for a
   * missing image: `newest build <id> revoked: <reason>`. Absent from servers before issue 24.
   */
  revoked?: string | null;
}

/** Status of one diskimage's uploads to one provider. */
export interface UploadTargetStatus {
  diskimage: string;
  provider: string;
  paused: PausedBy | null;
  waiting: string | null;
  failures: number;
  lastFailure: string | null;
  retryAt: number | null;
}

/** The lifecycle status the server publishes under `LIFECYCLE_STATUS_KEY` after each pass. */
export interface LifecycleStatus {
  diskimages: DiskimageStatus[];
  targets: UploadTargetStatus[];
  /** Deletions the server refuses, and why (unknown image ids or cloud images it will not touch). */
  held?: string[];
}

/** Key under which the server publishes the latest plan's status in the store. */
export const LIFECYCLE_STATUS_KEY = 'image-lifecycle';
/** Key of the server's heartbeat `{ pid, hostname, started, interval }` in the store. */
export const SERVER_HEARTBEAT_KEY = 'server';
