/**
 * The build-instance capability of a driver (issue 34, docs/snapshot-builds.md): what a
 * `builder: snapshot` build asks of the provider it builds on. The builder boots an instance
 * from a base, logs in with a key made for that build alone, runs the setup, powers the
 * instance off, and has the driver turn the instance's disk into an image file, then deletes
 * the instance on every path. Each instance is tagged as a build instance of this builder, so
 * one left by a builder killed with -9 is found and deleted on its next start.
 */

/** What one build instance is booted from and with. */
export interface BuildInstanceSpec {
  /** The build's image id (`debian-snap-0000000001`): it names and tags the instance. */
  buildId: string;
  /** The builder's id (builder_id.txt): the tag `leftovers` compares. */
  builderId: string;
  /** A cloud image's name or id; for qemu an image file's path. */
  baseImage: string;
  /** The public key (`ssh-ed25519 AAAA… comment`) the login user is given. */
  authorizedKey: string;
  /** Guest size where the driver takes it (qemu: MiB and CPUs; openstack: flavor or min-ram). */
  memory?: number;
  cpus?: number;
  flavor?: string;
  minRam?: number;
}

/** A booted build instance that answers SSH. */
export interface BuildInstance {
  /** The driver's id of it (qemu VM id, Nova server id). */
  id: string;
  host: string;
  port: number;
  /** Its SSH host keys (`<type> <base64>`), scanned at boot: the only keys the builder accepts. */
  hostKeys: string[];
  /** The login user the driver expects (its provider's `username`), unless the diskimage names one. */
  username: string;
}

/** How a snapshot's bytes are coming along. */
export type SnapshotProgress = (done: number, total: number) => void;

/** A provider's build instances, on the builder's host. */
export interface BuildInstances {
  /**
   * Boots an instance and resolves once its SSH answers (within the provider's boot timeout).
   * On failure nothing is left. Thrown: LaunchError with the cloud's (or console's) words.
   */
  boot(spec: BuildInstanceSpec, signal: AbortSignal): Promise<BuildInstance>;
  /**
   * Resolves once the instance has stopped, within `timeoutMs`. The builder has told the guest
   * to power itself off; the driver makes sure of it its own way (qemu: the VM's process
   * exits; openstack: Nova's `os-stop`, then SHUTOFF). Thrown: LaunchError.
   */
  stop(id: string, timeoutMs: number, signal: AbortSignal): Promise<void>;
  /**
   * Writes the stopped instance's disk as a whole image (no backing file) to `dest` in
   * `format`, streamed. Thrown: LaunchError, or the signal's reason when aborted.
   */
  snapshot(id: string, dest: string, format: string, opts: { signal: AbortSignal; onProgress?: SnapshotProgress }): Promise<void>;
  /** Deletes the instance and everything made for it; gone already is fine. */
  remove(id: string): Promise<void>;
  /** Build instances of `builderId` that exist now (left by a builder that died), by id. */
  leftovers(builderId: string): Promise<string[]>;
}
