/**
 * The config half of the driver contract, which loads no runtime code: validating a config
 * (lib/config) sees only these parts, through lib/drivers/config-registry.ts, so it never
 * pulls in a cloud client or ssh. The runtime half (providers, image services) is in
 * driver.ts and lib/drivers/registry.ts.
 */
import type { Fields, Problems, Schema } from '../../config/schema-kit.js';
import type { RolloutSettings } from '../../rollout/rollout-policy.js';
import type { ValidationSpec } from './validate-config.js';

/** What the launcher needs to know about one pool of a provider. */
export interface PoolInfo {
  name: string;
  /** Most nodes the pool may have at once (any state but deleting); 0 disables the pool. */
  maxServers: number;
  /** Labels the pool can serve. */
  labels: readonly string[];
  /** Copied to every new node's `attributes`. */
  nodeAttributes: Readonly<Record<string, string>>;
}

/** The common part of every provider config. */
export interface ProviderConfigBase {
  readonly name: string;
  readonly driver: string;
  /** Most launches in flight for the whole provider (-1: unlimited, 0: handle no requests). */
  readonly maxConcurrency: number;
}

/**
 * One diskimage a provider takes, as the image lifecycle and the builders see it: the
 * config side of a driver's image capability.
 */
export interface ImageTarget {
  /** The diskimage's name (also the image name the upload is tagged with). */
  readonly diskimage: string;
  /** The format uploads to this provider are in (the builder converts when needed). */
  readonly format: string;
  /** The provider diskimage's own `pause` (no uploads while set). */
  readonly pause: boolean;
  /** Metadata stored with each upload. */
  readonly meta: Readonly<Record<string, string>>;
  /** The name format of uploads (`{image_name}`, `{timestamp}`, `{build_id}`, `{upload_id}`). */
  readonly nameFormat: string;
  /** Seconds one upload attempt may take before it is aborted. */
  readonly uploadTimeout: number;
  /** What a new upload must pass before it is ready (`validate:`); null: ready once uploaded. */
  readonly validate: ValidationSpec | null;
  /** The provider's `post-upload-hook`, run by the builder after each upload; null: none. */
  readonly postUploadHook: string | null;
  /**
   * The provider diskimage's own `rollout:` (issue 24); null: the top-level diskimage's holds
   * (lib/rollout/rollout-config.ts says which one applies).
   */
  readonly rollout: RolloutSettings | null;
}

/**
 * Top-level keys a driver adds to nodepool.yaml (the openstack driver's `clouds-file`). The
 * config registry gathers them into the top-level schema (lib/config/schema.ts), so the
 * loaded Config carries them, camelCased, as it does core keys.
 */
export interface DriverSettings<F extends Fields = Fields> {
  readonly fields: F;
  /** Of those keys, the ones naming files: resolved against the config file's directory at load, like core paths. */
  readonly pathKeys: ReadonlyArray<keyof F & string>;
}

/** A driver's config part: schema, pools, cross-checks and, for image-managing drivers, image targets. */
export interface DriverConfig<C extends ProviderConfigBase = ProviderConfigBase> {
  readonly name: string;
  readonly providerSchema: Schema<C>;
  /** The top-level keys the driver adds, if any. */
  readonly settings?: DriverSettings;
  /** The provider's pools as the launcher sees them. */
  pools(config: C): PoolInfo[];
  /**
   * Cross-checks against the rest of the file (e.g. a pool label's diskimage). The loader
   * already checks that every pool label is defined in `labels`. `at` is the provider's key path.
   */
  checkReferences?(config: C, known: { labels: ReadonlySet<string>; diskimages: ReadonlySet<string> }, at: string, problems: Problems): void;
  /** The diskimages the provider takes, for drivers whose providers take uploaded images. */
  imageTargets?(config: C): ImageTarget[];
  /**
   * Set when the driver boots build instances for `builder: snapshot` diskimages (driver.ts
   * `buildInstances`). `usernameRequired`: the provider names no login user of its own, so
   * the diskimage's `snapshot.username` must (openstack: cloud-init gives the build's key to
   * the base image's default user, whose name only the operator knows).
   */
  readonly snapshotBuilds?: { readonly usernameRequired: boolean };
  /**
   * The secrets in this host's credential files for the driver's providers (the openstack
   * clouds.yaml's passwords), read by the config loader when a config with such a provider is
   * loaded, so every path out is scrubbed of them before the first cloud call. Never throws.
   */
  hostSecrets?(host: HostSecretSource): readonly string[];
}

/** Where a driver finds this host's credential files: the loaded config's settings and the process's environment and directories. */
export interface HostSecretSource {
  /** The loaded config (a driver reads only its own keys, e.g. `cloudsFile`). */
  settings: Readonly<Record<string, unknown>>;
  env: Readonly<Record<string, string | undefined>>;
  /** Absent (a caller that gave no host): only files the config names explicitly are read. */
  homeDir?: string;
  cwd?: string;
}
