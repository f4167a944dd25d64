/**
 * A driver's access to its cloud from this host: the contract between core and a driver for
 * credentials, sessions and HTTP clients. Core hands a driver the host's settings as an opaque
 * bag ({@link DriverHost}); the driver makes one {@link HostAccess} of its own from them per
 * provider config, which its provider and its image service share (lib/drivers/core/driver-hosts.ts
 * keeps them and closes each once). Core never looks inside either.
 */
import type { Logger } from '../../log.js';

/** What a process offers a driver to reach its cloud with the process's own credentials. */
export interface DriverHost {
  /**
   * The top-level config's settings the driver declared (`Driver.hostSettings`), by
   * loaded-config key: opaque to core, read only by the driver that owns the key.
   */
  settings: Readonly<Record<string, unknown>>;
  /** For a driver's standard file locations (e.g. the environment's credential file, `~/.config/…`, `./…`). */
  env: Readonly<Record<string, string | undefined>>;
  homeDir: string;
  cwd: string;
  log: Logger;
}

/** A driver's own access to one cloud (credentials, sessions, HTTP clients): closed once, when the process drops it. */
export interface HostAccess {
  /** Releases what the access holds (idle connections); requests in flight finish. */
  close(): void | Promise<void>;
}
