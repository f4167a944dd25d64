/**
 * The nodepool.yaml schema: one file for the server, the builders and the CLI. Key names
 * follow Nodepool's own; defaults live here only. Providers are checked against their
 * driver's schema (lib/drivers/config-registry.ts: config parts only, no runtime code).
 */
import { IMAGE_FORMATS } from '../images/image-file.js';
import { DEFAULT_DRIVER, DRIVER_NAMES, driverConfigs, type ProviderConfig } from '../drivers/config-registry.js';
import { diskimageName } from './names.js';
import {
  bool, checked, defaultsOf, int, list, object, oneOf, optional, record, required, scalarString, seconds, string,
  type Problems, type Schema,
} from './schema-kit.js';

const gearmanServer = object({
  host: required(string()),
  port: optional(int({ min: 1, max: 65535 }), 4730),
  /** PEM file paths; any of them turns TLS on. */
  'ssl-ca': optional(string()),
  'ssl-cert': optional(string()),
  'ssl-key': optional(string()),
});

const zookeeperServer = object({
  host: required(string()),
  port: optional(int({ min: 1, max: 65535 }), 2181),
  chroot: optional(string()),
});

/** PEM file paths for mutual TLS to ZooKeeper's secure port (Nodepool's `zookeeper-tls`). */
const zookeeperTls = object({
  ca: required(string()),
  cert: required(string()),
  key: required(string()),
});

const label = object({
  name: required(string()),
  'min-ready': optional(int({ min: -1 }), 0),
  /** Compared with node ages only (no timer waits for it), so not bounded by MAX_TIMER_SECONDS. */
  'max-ready-age': optional(int({ min: 0 }), 0),
});

/** How a diskimage is built: diskimage-builder, or a command of the operator's (docs/writing-a-builder.md). */
export const BUILDER_KINDS = ['dib', 'command'] as const;

const diskimage = checked(object({
  name: required(diskimageName()),
  elements: optional(list(string()), []),
  release: optional(scalarString()),
  'env-vars': optional(record(scalarString()), {}),
  formats: optional(list(oneOf(IMAGE_FORMATS), { uniqueBy: (f) => f, what: 'format' })),
  'rebuild-age': optional(seconds({ min: 1 }), 86400),
  'build-timeout': optional(seconds({ min: 1 }), 28800),
  pause: optional(bool(), false),
  'dib-cmd': optional(string(), 'disk-image-create'),
  'qemu-img-options': optional(string()),
  builder: optional(oneOf(BUILDER_KINDS), 'dib'),
  /** argv of a `builder: command` build (no shell); argv[0] is looked up in PATH. */
  command: optional(list(string(), { minItems: 1, what: 'argument' })),
}), (d, path, p) => {
  if (d.builder === 'command' && d.command === undefined) p.add(`${path}.command`, 'expected the argv to run (builder: command), got nothing');
  if (d.builder === 'dib' && d.command !== undefined) p.add(`${path}.command`, 'only used with builder: command (this diskimage is built by DIB)');
  if (d.builder === 'command' && d.elements.length) p.add(`${path}.elements`, 'only used with builder: dib (this diskimage is built by its command)');
});

/** Parses a provider with its driver's schema; an unknown driver names the provider. */
const provider: Schema<ProviderConfig> = {
  expected: 'a provider mapping',
  parse(v, path, p: Problems) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      p.add(path, `expected a provider mapping, got ${Array.isArray(v) ? 'a list' : String(v)}`);
      return undefined;
    }
    const raw: Record<string, unknown> = { driver: DEFAULT_DRIVER, ...(v as Record<string, unknown>) };
    const driver = raw.driver;
    if (typeof driver !== 'string' || !(DRIVER_NAMES as readonly string[]).includes(driver)) {
      const name = typeof raw.name === 'string' ? ` (provider ${raw.name})` : '';
      p.add(`${path}.driver`, `unknown driver ${JSON.stringify(driver)}${name}: expected one of ${DRIVER_NAMES.join(', ')}`);
      return undefined;
    }
    return (driverConfigs[driver as ProviderConfig['driver']].providerSchema as Schema<ProviderConfig>).parse(raw, path, p);
  },
};

/** Tunables of the server's image lifecycle (seconds). */
const imageLifecycle = checked(object({
  /** Seconds between planner passes. */
  interval: optional(seconds({ min: 1 }), 10),
  /** First delay after a failed build or upload; doubles per consecutive failure. */
  'retry-delay': optional(seconds({ min: 1 }), 60),
  /** Cap of that delay (at least `retry-delay`). */
  'max-retry-delay': optional(seconds({ min: 1 }), 3600),
  /** How long past its diskimage's build-timeout the server waits before failing a build. */
  'build-timeout-grace': optional(seconds({ min: 0 }), 300),
  /** Seconds between scans of the clouds for uploads no record knows (0 disables). */
  'leak-check-interval': optional(seconds({ min: 0 }), 300),
  /**
   * How long builds and uploads of a diskimage or provider that left the config are kept
   * before they are deleted, so a truncated or mistaken file that is put right cancels it.
   */
  'config-removal-grace': optional(seconds({ min: 0 }), 600),
  /**
   * How long image files builders advertise, and cloud images of this installation, must stay
   * unknown to the store (no record, in every pass) before they are deleted as strays or leaks.
   */
  'stray-grace': optional(seconds({ min: 0 }), 3600),
  /**
   * Delete unknown image files even when they look like another installation's or a lost
   * store's (most of what builders advertise is unknown, or the store has no builds at all).
   * Off: the server refuses, logs why and shows it in the lifecycle status.
   */
  'delete-unknown': optional(bool(), false),
}), (c, path, p) => {
  if (c.maxRetryDelay < c.retryDelay) {
    p.add(`${path}.max-retry-delay`, `expected at least retry-delay (${c.retryDelay}), got ${c.maxRetryDelay}: it caps the delay that starts at retry-delay`);
  }
});

/** Tunables of the launcher (seconds). */
const launcher = object({
  /** Pause between pool-worker passes while there is nothing to do. */
  interval: optional(seconds({ min: 0.05, fractions: true }), 1),
  /** Between passes of the deleter (used, failed and abandoned nodes). */
  'delete-interval': optional(seconds({ min: 0.05, fractions: true }), 5),
  /** Between passes of the cleanup worker (leaks, lost requests, stale locks, max ages). */
  'cleanup-interval': optional(seconds({ min: 0.05, fractions: true }), 60),
  /** A process's store session lapses this long after its last renewal (its locks go stale). */
  'session-ttl': optional(seconds({ min: 1, fractions: true }), 30),
});

const webapp = object({
  port: optional(int({ min: 0, max: 65535 }), 8005),
  'listen-address': optional(string(), '127.0.0.1'),
});

/** Schema of a whole nodepool.yaml. */
export const nodepoolSchema = object({
  'gearman-servers': optional(list(gearmanServer), []),
  'zookeeper-servers': optional(checked(list(zookeeperServer), (servers, path, p) => {
    // A ZooKeeper connection has one chroot: every server must name the same one (or none).
    const roots = new Set(servers.map((s) => (s.chroot ?? '').replace(/\/+$/, '')));
    if (roots.size > 1) p.add(path, `expected one chroot for all servers, got ${[...roots].map((r) => JSON.stringify(r || '/')).join(', ')}`);
  }), []),
  'zookeeper-tls': optional(zookeeperTls),
  /** ZooKeeper session timeout of each process's connection (Nodepool's default 10.0). */
  'zookeeper-timeout': optional(seconds({ min: 0.1, fractions: true }), 10),
  'state-dir': optional(string(), '/var/lib/nodepool'),
  'images-dir': optional(string(), '/opt/nodepool/images'),
  'build-log-dir': optional(string(), '/var/log/nodepool/builds'),
  'build-log-retention': optional(int({ min: 1 }), 7),
  'elements-dir': optional(string()),
  /** Parent of each build's private TMPDIR (default: `<images-dir>/.tmp`). */
  'build-tmp-dir': optional(string()),
  'clouds-file': optional(string()),
  labels: optional(list(label, { uniqueBy: (l) => l.name, what: 'label' }), []),
  diskimages: optional(list(diskimage, { uniqueBy: (d) => d.name, what: 'diskimage' }), []),
  providers: optional(list(provider, { uniqueBy: (pr) => pr.name, what: 'provider' }), []),
  /** Seconds a held node may live (0: unlimited); compared with ages only, so not bounded by MAX_TIMER_SECONDS. */
  'max-hold-age': optional(int({ min: 0 }), 0),
  'image-lifecycle': optional(imageLifecycle, () => defaultsOf(imageLifecycle)),
  launcher: optional(launcher, () => defaultsOf(launcher)),
  webapp: optional(webapp, () => defaultsOf(webapp)),
});

type Parsed<S> = S extends { parse(...args: never[]): infer T | undefined } ? Exclude<T, undefined> : never;
type RawConfig = Parsed<typeof nodepoolSchema>;
/** One diskimage of the config. */
export type DiskimageConfig = RawConfig['diskimages'][number];
/** One gearmand the processes connect to. */
export type GearmanServerConfig = RawConfig['gearmanServers'][number];
export type LabelConfig = RawConfig['labels'][number];
/** Tunables of the launcher. */
export type LauncherConfig = RawConfig['launcher'];
/** Tunables of the server's image lifecycle. */
export type ImageLifecycleConfig = RawConfig['imageLifecycle'];

/** The loaded, validated, frozen configuration. */
export interface Config extends Readonly<Omit<RawConfig, 'buildTmpDir'>> {
  /** The file it was loaded from. */
  readonly file: string;
  readonly buildTmpDir: string;
}
