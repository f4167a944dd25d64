/**
 * A `builder: snapshot` diskimage's `snapshot:` block: where and from what the build instance
 * boots, the setup run on it over SSH, and its limits. Names follow Nodepool 0.x's snapshot
 * images where they exist (`base-image`, `setup`, `username`, `min-ram`); the rest is this
 * program's own. Runtime-free.
 */
import { checked, int, list, object, optional, record, required, scalarString, seconds, string } from './schema-kit.js';

/** The `snapshot:` block as loaded (docs/snapshot-builds.md). */
export const snapshotSchema = checked(object({
  /** The provider (driver openstack or qemu) the build instance boots in. */
  provider: required(string()),
  /** A cloud image's name or id; for qemu an image file's absolute path. */
  'base-image': optional(string()),
  /**
   * Instead of `base-image`: another diskimage, whose newest ready upload to `provider` the
   * build boots (the server finds it when it starts the build, and waits while there is none).
   */
  'base-diskimage': optional(string()),
  /** argv: argv[0], a file on the builder host, is copied to the instance and run there with the rest. */
  setup: required(list(string(), { minItems: 1, what: 'argument' })),
  /** The setup's environment on the instance. */
  'env-vars': optional(record(scalarString()), {}),
  /** The login user on the instance; absent: the provider's (qemu `username`). */
  username: optional(string()),
  /** Seconds the setup may run (the whole build stays within `build-timeout`). */
  'setup-timeout': optional(seconds({ min: 1 }), 3600),
  /** openstack: the build instance's flavor by name, or the smallest with `min-ram` MiB. */
  flavor: optional(string()),
  'min-ram': optional(int({ min: 1 })),
  /** qemu: MiB of memory and CPUs of the build instance. */
  memory: optional(int({ min: 128 }), 1024),
  cpus: optional(int({ min: 1, max: 64 }), 1),
}), (s, path, p) => {
  if ((s.baseImage === undefined) === (s.baseDiskimage === undefined)) {
    p.add(path, s.baseImage === undefined ? 'expected base-image or base-diskimage, got neither' : 'expected one of base-image and base-diskimage, got both');
  }
  for (const name of Object.keys(s.envVars)) {
    if (!ENV_NAME.test(name)) p.add(`${path}.env-vars.${name}`, 'expected an environment variable name (letters, digits and _, not starting with a digit)');
  }
});

/** A name a POSIX shell takes as a variable. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
