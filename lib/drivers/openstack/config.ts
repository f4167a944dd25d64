/**
 * The `openstack` driver's provider config: schema (defaults live here only), the compiled
 * readonly type, the pools the launcher sees, and the cross-checks against the rest of the
 * file. Compiling resolves what depends on other keys: a pool's `host-key-checking` falls
 * back to the provider's, and `connection-port` to 5986 for winrm, else 22. Also the
 * top-level key the driver adds (`clouds-file`).
 */
import type { Problems, Schema } from '../../config/schema-kit.js';
import { IMAGE_FORMATS } from '../../images/image-file.js';
import { diskimageName } from '../../config/names.js';
import { providerDiskimageRollout } from '../../rollout/rollout-schema.js';
import { bool, int, list, object, oneOf, optional, record, required, scalarString, seconds, string } from '../../config/schema-kit.js';
import { commonPoolFields, commonProviderFields, CONNECTION_TYPES } from '../contract/common-config.js';
import { checkValidations, imageProviderFields, providerDiskimageValidation, validationOf } from '../contract/validate-config.js';
import type { DriverConfig, DriverSettings, HostSecretSource, ImageTarget, PoolInfo } from '../contract/driver-config.js';
import { cloudsYamlSecrets, standardSearchPaths } from './clouds-yaml.js';

/** Placeholders `hostname-format` may use. */
export const HOSTNAME_FIELDS = ['label.name', 'provider.name', 'node.id', 'pool.name'] as const;

const connectionFields = {
  'connection-type': optional(oneOf(CONNECTION_TYPES), 'ssh'),
  /** Absent: 5986 for winrm, else 22 (resolved when compiling). */
  'connection-port': optional(int({ min: 1, max: 65535 })),
};

const providerDiskimage = object({
  name: required(diskimageName()),
  pause: optional(bool(), false),
  meta: optional(record(scalarString()), {}),
  'config-drive': optional(bool(), true),
  /**
   * Ours (Nodepool reads it from the top-level diskimage only). Absent: the top-level
   * diskimage's `username`, else `zuul` (resolved at launch, see node-fields.ts).
   */
  username: optional(string()),
  ...connectionFields,
  ...providerDiskimageValidation,
  ...providerDiskimageRollout,
});

const cloudImage = object({
  name: required(string()),
  'image-id': optional(string()),
  'image-name': optional(string()),
  username: optional(string()),
  'config-drive': optional(bool()),
  'python-path': optional(string(), 'auto'),
  'shell-type': optional(string()),
  ...connectionFields,
});

const poolLabel = object({
  name: required(string()),
  diskimage: optional(string()),
  'cloud-image': optional(string()),
  'min-ram': optional(int({ min: 0 })),
  'flavor-name': optional(string()),
  'key-name': optional(string()),
  'boot-from-volume': optional(bool(), false),
  'volume-size': optional(int({ min: 1 }), 50),
  'console-log': optional(bool(), false),
  'instance-properties': optional(record(scalarString()), {}),
  /** Python `str.format` templates over `{request.<attr>}` (dynamic-properties.ts); added after `instance-properties`. */
  'dynamic-instance-properties': optional(record(scalarString()), {}),
  userdata: optional(string({ allowEmpty: true })),
  /** Absent: the pool's `networks`. */
  networks: optional(list(string())),
  /** Absent: the pool's `host-key-checking`. */
  'host-key-checking': optional(bool()),
});

const pool = object({
  ...commonPoolFields,
  'max-cores': optional(int({ min: 0 })),
  'max-ram': optional(int({ min: 0 })),
  /** Volumes (boot-from-volume nodes) the pool may have at once. */
  'max-volumes': optional(int({ min: 0 })),
  /** GB of volumes (each boot-from-volume node's `volume-size`) the pool may have at once. */
  'max-volume-gb': optional(int({ min: 0 })),
  'ignore-provider-quota': optional(bool(), false),
  'availability-zones': optional(list(string()), []),
  networks: optional(list(string()), []),
  'security-groups': optional(list(string()), []),
  /** Give a server without a public address a floating IP from the cloud's external network. */
  'auto-floating-ip': optional(bool(), true),
  /** Absent: the provider's `host-key-checking`. */
  'host-key-checking': optional(bool()),
  labels: optional(list(poolLabel, { uniqueBy: (l) => l.name, what: 'label' }), []),
});

const rawProviderSchema = object({
  ...commonProviderFields,
  driver: required(oneOf(['openstack'] as const)),
  cloud: required(string()),
  'region-name': optional(string()),
  'image-format': optional(oneOf(IMAGE_FORMATS.filter((f) => f !== 'tar' && f !== 'squashfs')), 'qcow2'),
  'image-name-format': optional(string(), '{image_name}-{timestamp}'),
  /** Seconds an upload may take (conversion excluded) before it is aborted and the partial image deleted. */
  'image-upload-timeout': optional(seconds({ min: 1 }), 3600),
  'hostname-format': optional(string(), '{label.name}-{provider.name}-{node.id}'),
  'launch-timeout': optional(seconds({ min: 1 }), 3600),
  /** Total attempts per node. */
  'launch-retries': optional(int({ min: 1 }), 3),
  'boot-timeout': optional(seconds({ min: 1 }), 60),
  /** The default of every pool's `host-key-checking`. */
  'host-key-checking': optional(bool(), true),
  /** Seconds between Nova calls (0: no throttle). */
  rate: optional(seconds({ min: 0, fractions: true }), 0),
  /** A compute port seen DOWN on two checks more than this many seconds apart is deleted (0: never). */
  'port-cleanup-interval': optional(int({ min: 0 }), 600),
  /**
   * Nodepool's `clean-floating-ips`: every leak-cleanup pass deletes the project's floating IPs
   * bound to no port (off by default: other users of the project may keep some on purpose).
   */
  'clean-floating-ips': optional(bool(), false),
  ...imageProviderFields,
  diskimages: optional(list(providerDiskimage, { uniqueBy: (d) => d.name, what: 'diskimage' }), []),
  'cloud-images': optional(list(cloudImage, { uniqueBy: (c) => c.name, what: 'cloud-image' }), []),
  pools: optional(list(pool, { uniqueBy: (p) => p.name, what: 'pool' }), []),
});

type Parsed<S> = S extends { parse(...args: never[]): infer T | undefined } ? Exclude<T, undefined> : never;
type Raw = Parsed<typeof rawProviderSchema>;
type Resolved<T> = Omit<T, 'connectionPort'> & { readonly connectionPort: number };

/** A diskimage this provider uploads and boots. */
export type OpenStackDiskimageConfig = Readonly<Resolved<Raw['diskimages'][number]>>;
/** An image the cloud already has (not managed by nodepool). */
export type OpenStackCloudImageConfig = Readonly<Resolved<Raw['cloudImages'][number]>>;
type RawLabel = Raw['pools'][number]['labels'][number];
/** One label of a pool, with `networks` and `host-key-checking` resolved from its pool's. */
export type OpenStackLabelConfig = Readonly<Omit<RawLabel, 'networks' | 'hostKeyChecking'>> & {
  readonly networks: readonly string[];
  readonly hostKeyChecking: boolean;
};
/** One pool, with `host-key-checking` resolved. */
export type OpenStackPoolConfig = Readonly<Omit<Raw['pools'][number], 'hostKeyChecking' | 'labels'>> & {
  readonly hostKeyChecking: boolean;
  readonly labels: readonly OpenStackLabelConfig[];
};
/** A loaded `driver: openstack` provider. */
export type OpenStackProviderConfig = Readonly<Omit<Raw, 'diskimages' | 'cloudImages' | 'pools'>> & {
  readonly diskimages: OpenStackDiskimageConfig[];
  readonly cloudImages: readonly OpenStackCloudImageConfig[];
  readonly pools: readonly OpenStackPoolConfig[];
};

function resolvePort<T extends { connectionType: string; connectionPort: number | undefined }>(x: T): Resolved<T> {
  return { ...x, connectionPort: x.connectionPort ?? (x.connectionType === 'winrm' ? 5986 : 22) };
}

/** The `{a.b}` placeholders of a format string. Pure. */
function placeholders(format: string): string[] {
  return [...format.matchAll(/\{([^{}]*)\}/g)].map((m) => m[1] as string);
}

/** Checks what one provider entry can check alone: formats and image references by id or name. */
function checkLocal(c: Raw, path: string, p: Problems): void {
  const unknown = placeholders(c.hostnameFormat).filter((f) => !(HOSTNAME_FIELDS as readonly string[]).includes(f));
  if (unknown.length) p.add(`${path}.hostname-format`, `unknown placeholder {${unknown[0]}} (known: ${HOSTNAME_FIELDS.map((f) => `{${f}}`).join(', ')})`);
  c.cloudImages.forEach((ci, i) => {
    if (ci.imageId !== undefined && ci.imageName !== undefined) p.add(`${path}.cloud-images[${i}]`, 'expected image-id or image-name, got both');
  });
}

/** Schema of one `driver: openstack` provider (parses, checks, compiles). */
export const openstackProviderSchema: Schema<OpenStackProviderConfig> = {
  expected: rawProviderSchema.expected,
  parse(v, path, p) {
    const raw = rawProviderSchema.parse(v, path, p);
    if (raw === undefined) return undefined;
    const before = p.list.length;
    checkLocal(raw, path, p);
    if (p.list.length > before) return undefined;
    return {
      ...raw,
      diskimages: raw.diskimages.map(resolvePort),
      cloudImages: raw.cloudImages.map(resolvePort),
      pools: raw.pools.map((pl) => {
        const hostKeyChecking = pl.hostKeyChecking ?? raw.hostKeyChecking;
        return {
          ...pl, hostKeyChecking,
          labels: pl.labels.map((l) => ({ ...l, networks: l.networks ?? pl.networks, hostKeyChecking: l.hostKeyChecking ?? hostKeyChecking })),
        };
      }),
    };
  },
};

/** Cross-checks of a provider's labels against the file (the loader checks pool labels exist). */
export function checkOpenStackReferences(c: OpenStackProviderConfig, _known: { labels: ReadonlySet<string>; diskimages: ReadonlySet<string> }, at: string, p: Problems): void {
  const provImages = new Set(c.diskimages.map((d) => d.name));
  const cloudImages = new Set(c.cloudImages.map((ci) => ci.name));
  c.pools.forEach((pool, k) => pool.labels.forEach((l, m) => {
    const lat = `${at}.pools[${k}].labels[${m}]`;
    if (l.diskimage === undefined && l.cloudImage === undefined) p.add(lat, 'expected diskimage or cloud-image, got neither');
    if (l.diskimage !== undefined && l.cloudImage !== undefined) p.add(lat, 'expected diskimage or cloud-image, got both');
    if (l.diskimage !== undefined && !provImages.has(l.diskimage)) {
      p.add(`${lat}.diskimage`, `diskimage ${JSON.stringify(l.diskimage)} is not listed in ${at}.diskimages`);
    }
    if (l.cloudImage !== undefined && !cloudImages.has(l.cloudImage)) {
      p.add(`${lat}.cloud-image`, `cloud-image ${JSON.stringify(l.cloudImage)} is not listed in ${at}.cloud-images`);
    }
    if (l.minRam === undefined && l.flavorName === undefined) p.add(lat, 'expected min-ram or flavor-name, got neither');
  }));
  checkValidations(c, at, p);
}

/** The provider's pools as the launcher sees them. */
export function openstackPools(c: OpenStackProviderConfig): PoolInfo[] {
  return c.pools.map(poolInfo);
}

/** What the launcher needs of one pool. */
export function poolInfo(pl: OpenStackPoolConfig): PoolInfo {
  return { name: pl.name, maxServers: pl.maxServers, labels: pl.labels.map((l) => l.name), nodeAttributes: pl.nodeAttributes };
}

/** Fills `hostname-format` (placeholders checked when the config was loaded). Pure. */
export function formatHostname(format: string, v: { label: string; provider: string; node: string; pool: string }): string {
  const values: Record<string, string> = { 'label.name': v.label, 'provider.name': v.provider, 'node.id': v.node, 'pool.name': v.pool };
  return format.replace(/\{([^{}]*)\}/g, (m, key: string) => values[key] ?? m);
}

/** The diskimages the provider uploads, in its format and name format. */
export function openstackImageTargets(c: OpenStackProviderConfig): ImageTarget[] {
  return c.diskimages.map((d) => ({
    diskimage: d.name, format: c.imageFormat, pause: d.pause, meta: d.meta, nameFormat: c.imageNameFormat, uploadTimeout: c.imageUploadTimeout,
    validate: validationOf(c, d), postUploadHook: c.postUploadHook ?? null, rollout: d.rollout ?? null,
  }));
}

/**
 * The top-level keys the openstack driver adds: `clouds-file`, the clouds.yaml its providers
 * authenticate with (unset: the standard locations; lib/drivers/openstack/access.ts).
 */
export const openstackSettings = {
  fields: { 'clouds-file': optional(string()) },
  pathKeys: ['clouds-file'],
} satisfies DriverSettings;

/** The secrets of the clouds.yaml this host's providers authenticate with: the config's `clouds-file`, else the standard locations. */
function cloudsFileSecrets(host: HostSecretSource): readonly string[] {
  const file = host.settings.cloudsFile;
  if (typeof file === 'string') return cloudsYamlSecrets({ path: file });
  if (host.homeDir === undefined || host.cwd === undefined) return [];
  return cloudsYamlSecrets({ searchPaths: standardSearchPaths({ env: host.env, homeDir: host.homeDir, cwd: host.cwd }) });
}

/** The openstack driver's config part (runtime-free; lib/drivers/openstack/index.ts adds providers). */
export const openstackConfig: DriverConfig<OpenStackProviderConfig> & { readonly settings: typeof openstackSettings } = {
  name: 'openstack',
  providerSchema: openstackProviderSchema,
  settings: openstackSettings,
  pools: openstackPools,
  checkReferences: checkOpenStackReferences,
  imageTargets: openstackImageTargets,
  hostSecrets: cloudsFileSecrets,
  snapshotBuilds: { usernameRequired: true },
};
