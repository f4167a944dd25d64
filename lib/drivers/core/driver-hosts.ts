/**
 * The process's driver host accesses (host-access.ts): each provider's access is made once per
 * (provider config, the settings its driver declared) through its driver's `hostAccess`, and is
 * shared by the provider (ProviderContext `hostAccess`) and its image service (the process's
 * {@link ImageServiceFactory}, which this object also is). An access is closed exactly once,
 * when the process closes them all: one a later config of the same provider superseded is
 * kept until then, because a provider still stopping or an upload in flight may be using it
 * (closing a session ends its connections). A failed creation is not kept.
 */
import { coerceError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { fingerprint } from '../../config/config-equals.js';
import type { ProviderConfig } from '../config-registry.js';
import type { BuildInstances } from '../contract/build-instance.js';
import type { Driver } from '../contract/driver.js';
import type { HostAccess } from '../contract/host-access.js';
import type { ImageService } from '../contract/image-service.js';
import { driverOf } from '../registry.js';

/** The image service of a provider whose driver manages images (one per provider config, reused). */
export type ImageServiceFactory = (provider: ProviderConfig) => Promise<ImageService>;

/** The build instances of a provider whose driver boots them (snapshot builds), over the provider's host access. */
export type BuildInstancesFactory = (provider: ProviderConfig) => Promise<BuildInstances>;

/** What the process gives drivers: its settings (the loaded config, read only by the keys a driver declares) and environment. */
export interface DriverHostsOptions {
  /** The current top-level settings (the loaded config); read at each use, so a reload counts. */
  settings: () => object;
  env: Readonly<Record<string, string | undefined>>;
  homeDir: string;
  cwd: string;
  log: Logger;
  /** The driver of a provider (default: the registry's). */
  driverOf?: (p: ProviderConfig) => Driver<ProviderConfig>;
}

/** The process's host accesses, callable as its {@link ImageServiceFactory}. */
export interface DriverHosts extends ImageServiceFactory {
  /** The provider's host access. Rejected: Error for a driver without one; the driver's error when it cannot be made. */
  access(provider: ProviderConfig): Promise<HostAccess>;
  buildInstances: BuildInstancesFactory;
  /** Closes every access (each once); later calls make new ones. Idempotent. */
  close(): Promise<void>;
}

interface Entry {
  key: string;
  access: Promise<HostAccess | undefined>;
  service?: Promise<ImageService>;
}

/** The keys a driver declared, picked from the settings. Pure. */
function pick(settings: object, keys: readonly string[] | undefined): Readonly<Record<string, unknown>> {
  const wanted = new Set(keys ?? []);
  return Object.fromEntries(Object.entries(settings).filter(([k]) => wanted.has(k)));
}

export function driverHosts(opts: DriverHostsOptions): DriverHosts {
  const lookup = opts.driverOf ?? driverOf;
  /** Provider name → its current entry. */
  const entries = new Map<string, Entry>();
  const closeAccess = async (e: Entry): Promise<void> => {
    try {
      const a = await e.access.catch(() => undefined);
      await a?.close();
    } catch (err) {
      opts.log.warn('could not close a host access', { error: coerceError(err).message });
    }
  };
  /** Superseded entries, closed with the rest. */
  const retired: Entry[] = [];

  const entry = (p: ProviderConfig): Entry => {
    const driver = lookup(p);
    const settings = pick(opts.settings(), driver.hostSettings);
    const key = `${p.driver}\0${fingerprint(p)}\0${fingerprint(settings)}`;
    const old = entries.get(p.name);
    if (old?.key === key) return old;
    const access = driver.hostAccess
      ? driver.hostAccess(p, { settings, env: opts.env, homeDir: opts.homeDir, cwd: opts.cwd, log: opts.log.child({ provider: p.name }) })
      : Promise.resolve(undefined);
    const e: Entry = { key, access };
    entries.set(p.name, e);
    access.catch(() => { if (entries.get(p.name) === e) entries.delete(p.name); });
    if (old) retired.push(old);
    return e;
  };

  const imageService = (p: ProviderConfig): Promise<ImageService> => {
    const driver = lookup(p);
    const make = driver.imageService?.bind(driver);
    if (!make) return Promise.reject(new Error(`provider ${p.name} (driver ${p.driver}) manages no images`));
    const e = entry(p);
    e.service ??= e.access.then((a) => make(p, a, opts.log.child({ provider: p.name })));
    return e.service;
  };
  const access = async (p: ProviderConfig): Promise<HostAccess> => {
    if (!lookup(p).hostAccess) throw new Error(`provider ${p.name} (driver ${p.driver}) has no host access`);
    const a = await entry(p).access;
    if (!a) throw new Error(`provider ${p.name}: its driver made no host access`);
    return a;
  };
  const buildInstances = async (p: ProviderConfig): Promise<BuildInstances> => {
    const driver = lookup(p);
    const make = driver.buildInstances?.bind(driver);
    if (!make) throw new Error(`provider ${p.name} (driver ${p.driver}) cannot boot build instances`);
    return make(p, await entry(p).access, opts.log.child({ provider: p.name }));
  };
  const close = async (): Promise<void> => {
    const all = [...retired.splice(0), ...entries.values()];
    entries.clear();
    await Promise.all(all.map(closeAccess));
  };
  return Object.assign(imageService, { access, buildInstances, close });
}

/** Host accesses for a context that has none (e.g. a CLI command given no credentials): every call rejects with `why(provider)`. */
export function noDriverHosts(why: (provider: ProviderConfig) => Error): DriverHosts {
  const reject = <T>(p: ProviderConfig): Promise<T> => Promise.reject(why(p));
  return Object.assign((p: ProviderConfig) => reject<ImageService>(p), {
    access: (p: ProviderConfig) => reject<HostAccess>(p), buildInstances: (p: ProviderConfig) => reject<BuildInstances>(p), close: () => Promise.resolve(),
  });
}
