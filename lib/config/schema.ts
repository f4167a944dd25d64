/**
 * The nodepool.yaml schema: one file for the server, the builders and the CLI. Key names
 * follow Nodepool's own; defaults live here only. Providers are checked against their
 * driver's schema, and the top-level keys a driver adds (`clouds-file`) come from its
 * declaration (lib/drivers/config-registry.ts: config parts only, no runtime code).
 */
import { driverSettingFields } from '../drivers/config-registry.js';
import { diskimageList } from './diskimages.js';
import { minReadySchedule } from './min-ready-schedule.js';
import { providerList } from './providers.js';
import {
  bool, checked, defaultsOf, int, list, mapped, object, optional, required, seconds, string,
} from './schema-kit.js';
import { tenantResourceLimits } from './tenant-limits.js';
import { webappSchema } from './webapp-schema.js';

export { BUILDER_KINDS, type DiskimageConfig } from './diskimages.js';
export type { TenantResourceLimit } from './tenant-limits.js';
export type { WebappConfig } from './webapp-schema.js';

const gearmanServer = object({
  host: required(string()),
  port: optional(int({ min: 1, max: 65535 }), 4730),
  /** PEM file paths; any of them turns TLS on. */
  'ssl-ca': optional(string()),
  'ssl-cert': optional(string()),
  'ssl-key': optional(string()),
});

/** `port` is left unset here: its default depends on `zookeeper-tls`, see {@link zookeeperPortDefault}. */
const zookeeperServer = object({
  host: required(string()),
  port: optional(int({ min: 1, max: 65535 })),
  chroot: optional(string()),
});

/**
 * The port of a `zookeeper-servers` entry without one: 2281 (ZooKeeper's secure port, Nodepool
 * 11's default) when `zookeeper-tls` is set, else 2181 (plain ZooKeeper, this program's default).
 */
export function zookeeperPortDefault(tls: boolean): number {
  return tls ? 2281 : 2181;
}

/** `zookeeper-servers` (also in the secure file, where it replaces the main file's). */
export const zookeeperServers = checked(list(zookeeperServer), (servers, path, p) => {
  // A ZooKeeper connection has one chroot: every server must name the same one (or none).
  const roots = new Set(servers.map((s) => (s.chroot ?? '').replace(/\/+$/, '')));
  if (roots.size > 1) p.add(path, `expected one chroot for all servers, got ${[...roots].map((r) => JSON.stringify(r || '/')).join(', ')}`);
});

/** PEM file paths for mutual TLS to ZooKeeper's secure port (Nodepool's `zookeeper-tls`); also in the secure file. */
export const zookeeperTls = object({
  ca: required(string()),
  cert: required(string()),
  key: required(string()),
});

const label = object({
  name: required(string()),
  'min-ready': optional(int({ min: -1 }), 0),
  /** Compared with node ages only (no timer waits for it), so not bounded by MAX_TIMER_SECONDS. */
  'max-ready-age': optional(int({ min: 0 }), 0),
  /** min-ready by cron periods, `min-ready` outside them (lib/config/min-ready-schedule.ts). */
  'min-ready-schedule': optional(minReadySchedule, []),
});

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
   * How long a lost build (no builder advertises its files) is kept for its builder to come
   * back (a reboot) before it is deleted, once none of its uploads is left either.
   */
  'lost-grace': optional(seconds({ min: 0 }), 3600),
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

/** The circuit breaker of each provider-pool (see launcher.breaker). */
const breaker = checked(object({
  failures: optional(int({ min: 1, max: 1000 }), 3),
  backoff: optional(seconds({ min: 0.05, fractions: true }), 60),
  'max-backoff': optional(seconds({ min: 0.05, fractions: true }), 900),
  'probe-timeout': optional(seconds({ min: 1, fractions: true }), 900),
}), (c, path, p) => {
  if (c.maxBackoff < c.backoff) p.add(`${path}.max-backoff`, `expected at least backoff (${c.backoff}), got ${c.maxBackoff}: it caps the backoff that starts at backoff`);
});

/** Tunables of the launcher (seconds). */
const launcher = object({
  /** Pause between pool-worker passes while there is nothing to do. */
  interval: optional(seconds({ min: 0.05, fractions: true }), 1),
  /** Between passes of the deleter (used, failed and abandoned nodes). */
  'delete-interval': optional(seconds({ min: 0.05, fractions: true }), 5),
  /**
   * Deletes in flight at most. A node to delete (used, failed, …) is taken as soon as the store
   * tells of it, and a finished delete frees its place for the next at once; `delete-interval`
   * is only the backstop pass. 10 keeps a burst of returned cloud nodes to 10 DELETE calls in
   * flight, well inside the API rate limits clouds commonly set per project (Nova's default
   * rate limits and most public clouds' allow tens of writes a second), while static slots
   * (no remote call) are never held up by it.
   */
  'delete-concurrency': optional(int({ min: 1, max: 1000 }), 10),
  /** Between passes of the cleanup worker (leaks, lost requests, stale locks, max ages). */
  'cleanup-interval': optional(seconds({ min: 0.05, fractions: true }), 60),
  /** A process's store session lapses this long after its last renewal (its locks go stale). */
  'session-ttl': optional(seconds({ min: 1, fractions: true }), 30),
  /**
   * In a fleet of servers without `--provider` (docs/fleet.md): the bound within which a pool
   * of a dead or stopped member runs again elsewhere. A member's store session lapses 4 s
   * before it (at most `session-ttl`), so 8 s is the least (ZooKeeper's shortest session is 4 s).
   */
  'takeover-timeout': optional(seconds({ min: 8, fractions: true }), 30),
  /**
   * The circuit breaker of each provider-pool (lib/fleet/breaker.ts, docs/fleet.md): `failures`
   * launch failures in a row open it; while open the pool takes no request another pool can
   * serve; after `backoff` one probe launch goes through (doubled after a failed probe, up to
   * `max-backoff`); a probe with no outcome after `probe-timeout` counts as failed.
   */
  breaker: optional(breaker, () => defaultsOf(breaker)),
});

/** The keys of nodepool.yaml that core code reads, up to where the drivers' keys go (the order known keys are listed in). */
const coreHead = {
  'gearman-servers': optional(list(gearmanServer), []),
  'zookeeper-servers': optional(zookeeperServers, []),
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
};

/** The rest of core's keys, after the drivers' (Nodepool's `clouds-file` came after `build-tmp-dir`). */
const coreTail = {
  labels: optional(list(label, { uniqueBy: (l) => l.name, what: 'label' }), []),
  /** Abstract entries are parents only and left out; see lib/config/diskimages.ts for inheritance. */
  diskimages: optional(diskimageList(), []),
  /** Providers of drivers this program lacks are left out with a warning (lib/config/providers.ts). */
  providers: optional(providerList(), []),
  /** Per Zuul tenant, quota across every provider (lib/config/tenant-limits.ts). */
  'tenant-resource-limits': optional(tenantResourceLimits(), []),
  /** Seconds a held node may live (0: unlimited); compared with ages only, so not bounded by MAX_TIMER_SECONDS. */
  'max-hold-age': optional(int({ min: 0 }), 0),
  'image-lifecycle': optional(imageLifecycle, () => defaultsOf(imageLifecycle)),
  launcher: optional(launcher, () => defaultsOf(launcher)),
  /** The web status, its write API's authenticators and TLS (lib/config/webapp-schema.ts). */
  webapp: optional(webappSchema, () => defaultsOf(webappSchema)),
};

const coreFields = { ...coreHead, ...coreTail };
const redeclared = Object.keys(driverSettingFields).filter((k) => k in coreFields);
if (redeclared.length > 0) throw new Error(`drivers redeclare top-level keys: ${redeclared.join(', ')}`);

/** Schema of a whole nodepool.yaml: the core keys and those the drivers add. */
export const nodepoolSchema = mapped(object({ ...coreHead, ...driverSettingFields, ...coreTail }), (c) => ({
  ...c,
  zookeeperServers: c.zookeeperServers.map((s) => ({ ...s, port: s.port ?? zookeeperPortDefault(c.zookeeperTls !== undefined) })),
}));

type Parsed<S> = S extends { parse(...args: never[]): infer T | undefined } ? Exclude<T, undefined> : never;
type RawConfig = Parsed<typeof nodepoolSchema>;
/** One gearmand the processes connect to. */
export type GearmanServerConfig = RawConfig['gearmanServers'][number];
export type LabelConfig = RawConfig['labels'][number];
/** Tunables of the launcher. */
export type LauncherConfig = RawConfig['launcher'];
/** Tunables of the server's image lifecycle. */
export type ImageLifecycleConfig = RawConfig['imageLifecycle'];

/** A key Nodepool accepts that this program does not honour, found while loading (logged, printed by config-validate). */
export interface ConfigWarning {
  /** The file it is in (nodepool.yaml or the secure file). */
  readonly file: string;
  readonly path: string;
  readonly message: string;
}

/** The loaded, validated, frozen configuration. */
export interface Config extends Readonly<Omit<RawConfig, 'buildTmpDir'>> {
  /** The file it was loaded from. */
  readonly file: string;
  /** The secure file merged into it (`-s/--secure`), if any. */
  readonly secureFile?: string;
  readonly buildTmpDir: string;
  /** Keys accepted but not honoured: every daemon logs them at load and reload. */
  readonly warnings: readonly ConfigWarning[];
}
