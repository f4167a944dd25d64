/**
 * The one config loader for every process: read YAML (after Nodepool's `%(NODEPOOL_…)`
 * substitution) and the secure file, validate against the schema and each provider's driver
 * schema, check cross-references, apply defaults, freeze. Keys accepted but not honoured come
 * back as `warnings`, for the daemons to log and `config-validate` to print.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { DRIVER_NAMES, DRIVER_SETTING_PATHS, driverConfigOf, driverConfigs, imageTargets, providerPools } from '../drivers/config-registry.js';
import { isSecretKey, processSecrets, SecretRegistry } from '../redact.js';
import { substituteEnv, unsetPlaceholders, type ConfigEnv } from './env-substitution.js';
import { camel, deepFreeze, Problems } from './schema-kit.js';
import { nodepoolSchema, type Config, type ConfigWarning } from './schema.js';
import { checkSecureDiskimages, secureParts } from './secure.js';

export type { ConfigEnv } from './env-substitution.js';

/** How a config is read besides its file. */
export interface LoadOptions {
  /** The environment for `%(NODEPOOL_…)` (bin/ passes process.env; lib never reads it). None: no substitution. */
  env?: ConfigEnv;
  /** The secure file (`-s/--secure`). */
  secureFile?: string;
  /**
   * This process's home and working directories, where drivers look for credential files the
   * config does not name (clouds.yaml's standard locations). None: only named files are read.
   */
  host?: { homeDir: string; cwd: string };
  /**
   * Where the loaded config's secrets are registered (default: the process's,
   * {@link processSecrets}): the secure file's env-vars, secret-named env-vars and
   * `%(NODEPOOL_…)` values, webapp HS256 secrets, and the drivers' credential files
   * (clouds.yaml), so every log line, build log and failure reason is scrubbed of them from
   * the moment the config is loaded or reloaded.
   */
  secrets?: SecretRegistry;
}

/** A secure file's text for {@link parseConfig}. */
export interface SecureText {
  file: string;
  text: string;
}

/** Values from the secure file's env-vars, secret-named env-vars and `%(NODEPOOL_…)` variables, webapp secrets and the drivers' credential files. */
const SECRETS = new WeakMap<Config, readonly string[]>();

/** The secret values a config was loaded with (never logged; see lib/redact.ts processSecrets). */
export function configSecrets(config: Config): readonly string[] {
  return SECRETS.get(config) ?? [];
}

/** Substitutes, then parses one YAML document. Thrown: {@link ConfigError} for invalid YAML or an empty document. */
function readDocument(text: string, file: string, env: ConfigEnv | undefined, secrets: Set<string>): unknown {
  let source = text;
  if (env) {
    const s = substituteEnv(text, env);
    source = s.text;
    s.secretValues.forEach((v) => secrets.add(v));
  }
  let doc: unknown;
  try {
    doc = yaml.load(source, { filename: file });
  } catch (err) {
    const e = err as { reason?: string; mark?: { line: number; column: number } };
    const where = e.mark ? `line ${e.mark.line + 1}, column ${e.mark.column + 1}` : '';
    throw new ConfigError(file, [{ path: where, message: `invalid YAML: ${e.reason ?? (err as Error).message}` }], { cause: err });
  }
  if (doc === undefined || doc === null) {
    // A truncated or half-written file reads as an empty document; taken as "no providers, no
    // diskimages" a live reload would delete every image, so it is never a valid config.
    throw new ConfigError(file, [{ path: '', message: 'the document is empty (a truncated or half-written file?); a config needs at least one key' }]);
  }
  const p = new Problems();
  unsetPlaceholders(doc, '', p);
  if (p.list.length) throw new ConfigError(file, p.list);
  return doc;
}

const warningsOf = (file: string, list: readonly ConfigProblem[]): ConfigWarning[] => list.map((w) => ({ file, ...w }));

/** Parses config text, and the secure file's (pure). Thrown: {@link ConfigError} listing every problem with its file and key path. */
export function parseConfig(text: string, file: string, opts: { env?: ConfigEnv; secure?: SecureText } = {}): Config {
  const secrets = new Set<string>();
  try {
    return parseWith(text, file, opts, secrets);
  } catch (err) {
    // A substituted secret put where the schema quotes what it found (`max-servers: expected
    // integer, got "<the value>"`) is replaced in the message before the error leaves.
    if (!(err instanceof ConfigError) || secrets.size === 0) throw err;
    const known = new SecretRegistry();
    secrets.forEach((v) => known.add(v));
    const problems = err.problems.map((p) => ({ path: known.scrub(p.path), message: known.scrub(p.message) }));
    throw new ConfigError(err.file, problems, { cause: err.cause });
  }
}

function parseWith(text: string, file: string, opts: { env?: ConfigEnv; secure?: SecureText }, secrets: Set<string>): Config {
  const warnings: ConfigWarning[] = [];
  let doc = readDocument(text, file, opts.env, secrets);
  let secure: ReturnType<typeof secureParts>;
  if (opts.secure) {
    const sp = new Problems();
    secure = secureParts(readDocument(opts.secure.text, opts.secure.file, opts.env, secrets), sp);
    if (!secure || sp.list.length) throw new ConfigError(opts.secure.file, sp.list);
    warnings.push(...warningsOf(opts.secure.file, sp.warnings));
    if (typeof doc === 'object' && !Array.isArray(doc)) doc = { ...(doc as object), ...secure.replace };
  }
  secretEnvVars(doc).forEach((v) => secrets.add(v));
  const problems = new Problems();
  const parsed = nodepoolSchema.parse(doc, '', problems);
  if (parsed) checkReferences(parsed, problems);
  if (!parsed || problems.list.length) throw new ConfigError(file, problems.list);
  warnings.unshift(...warningsOf(file, problems.warnings));
  let diskimages = parsed.diskimages;
  if (secure && opts.secure) {
    const sp = new Problems();
    const abstract = new Set(rawDiskimages(doc).filter((d) => d.abstract === true).map((d) => String(d.name)));
    checkSecureDiskimages(secure, new Set(diskimages.map((d) => d.name)), abstract, file, sp);
    if (sp.list.length) throw new ConfigError(opts.secure.file, sp.list);
    const extra = new Map(secure.diskimages.map((d) => [d.name, d.envVars]));
    diskimages = diskimages.map((d) => (extra.has(d.name) ? { ...d, envVars: { ...d.envVars, ...extra.get(d.name) } } : d));
    secure.diskimages.forEach((d) => Object.values(d.envVars).forEach((v) => secrets.add(v)));
  }
  const base = path.dirname(path.resolve(file));
  const abs = (p: string): string => path.resolve(base, p);
  const imagesDir = abs(parsed.imagesDir);
  // The write API's HS256 secrets are scrubbed from logs like the substituted ones.
  parsed.webapp.auth.forEach((a) => { if (a.secret) secrets.add(a.secret); });
  const config: Config = deepFreeze({
    ...parsed,
    diskimages,
    // Key and certificate files are relative to the config file, like every other path in it.
    webapp: {
      ...parsed.webapp,
      auth: parsed.webapp.auth.map((a) => ({
        ...a, ...(a.publicKey !== undefined ? { publicKey: abs(a.publicKey) } : {}), ...(a.jwks !== undefined ? { jwks: abs(a.jwks) } : {}),
      })),
      tls: parsed.webapp.tls ? { cert: abs(parsed.webapp.tls.cert), key: abs(parsed.webapp.tls.key) } : undefined,
    },
    file,
    ...(opts.secure ? { secureFile: opts.secure.file } : {}),
    stateDir: abs(parsed.stateDir),
    imagesDir,
    buildLogDir: abs(parsed.buildLogDir),
    elementsDir: parsed.elementsDir === undefined ? undefined : abs(parsed.elementsDir),
    buildTmpDir: parsed.buildTmpDir === undefined ? path.join(imagesDir, '.tmp') : abs(parsed.buildTmpDir),
    ...driverPaths(parsed, abs),
    warnings,
  });
  SECRETS.set(config, [...secrets]);
  return config;
}

/** The driver-declared keys that name files (`clouds-file`), resolved like every other path in the file. */
function driverPaths(parsed: Parsed, abs: (p: string) => string): Record<string, string | undefined> {
  const raw: Readonly<Record<string, unknown>> = parsed;
  return Object.fromEntries(DRIVER_SETTING_PATHS.map(camel).map((key) => {
    const value = raw[key];
    return [key, typeof value === 'string' ? abs(value) : undefined];
  }));
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [{ path: '', message: `cannot read: ${(err as Error).message}` }], { cause: err });
  }
}

/**
 * Reads and parses a config file and its secure file, then registers its secrets with
 * `opts.secrets` (see {@link LoadOptions.secrets}), the drivers' credential files included.
 * Thrown: {@link ConfigError}, also when a file cannot be read.
 */
export function loadConfig(file: string, opts: LoadOptions = {}): Config {
  const text = readText(file);
  const secure = opts.secureFile === undefined ? undefined : { file: opts.secureFile, text: readText(opts.secureFile) };
  const config = parseConfig(text, file, { ...(opts.env ? { env: opts.env } : {}), ...(secure ? { secure } : {}) });
  const all = [...configSecrets(config), ...hostSecrets(config, opts)];
  SECRETS.set(config, all);
  const registry = opts.secrets ?? processSecrets;
  all.forEach((v) => registry.add(v));
  return config;
}

/** The secrets of the credential files of the drivers the config's providers use (each driver asked once). */
function hostSecrets(config: Config, opts: LoadOptions): string[] {
  const drivers = new Set(config.providers.map(driverConfigOf));
  const host = { settings: config as unknown as Readonly<Record<string, unknown>>, env: opts.env ?? {}, ...(opts.host ?? {}) };
  return [...drivers].flatMap((d) => [...(d.hostSecrets?.(host) ?? [])]);
}

/**
 * Values of secret-named diskimage env-vars in a parsed document (`DIB_PASSWORD: …`, and a
 * snapshot build's setup's `env-vars`), however they were written.
 */
function secretEnvVars(doc: unknown): string[] {
  return rawDiskimages(doc).flatMap((d) => [d['env-vars'], (d.snapshot as Record<string, unknown> | undefined)?.['env-vars']]).flatMap((vars) => {
    if (typeof vars !== 'object' || vars === null || Array.isArray(vars)) return [];
    return Object.entries(vars as Record<string, unknown>)
      .filter(([k, v]) => isSecretKey(k) && (typeof v === 'string' || typeof v === 'number'))
      .map(([, v]) => String(v));
  });
}

function rawDiskimages(doc: unknown): Array<Record<string, unknown>> {
  const list = (doc as { diskimages?: unknown }).diskimages;
  return Array.isArray(list) ? list.filter((d): d is Record<string, unknown> => typeof d === 'object' && d !== null) : [];
}

type Parsed = NonNullable<ReturnType<typeof nodepoolSchema.parse>>;

/** Cross-references: provider diskimages and pool labels must exist; drivers check the rest. */
function checkReferences(c: Parsed, p: Problems): void {
  const diskimages = new Set(c.diskimages.map((d) => d.name));
  const labels = new Set(c.labels.map((l) => l.name));
  c.providers.forEach((prov, i) => {
    imageTargets(prov).forEach((t, j) => {
      if (!diskimages.has(t.diskimage)) p.add(`providers[${i}].diskimages[${j}].name`, `diskimage ${JSON.stringify(t.diskimage)} is not defined in diskimages`);
    });
    providerPools(prov).forEach((pool, k) => pool.labels.forEach((l) => {
      if (!labels.has(l)) p.add(`providers[${i}].pools[${k}]`, `label ${JSON.stringify(l)} (pool ${pool.name}) is not defined in labels`);
    }));
    driverConfigOf(prov).checkReferences?.(prov, { labels, diskimages }, `providers[${i}]`, p);
  });
  checkSnapshotReferences(c, p);
}

/**
 * A snapshot build's provider exists, its driver boots build instances, the login user is known
 * where the driver needs it, and a `base-diskimage` is another diskimage that provider takes.
 */
function checkSnapshotReferences(c: Parsed, p: Problems): void {
  const providers = new Map(c.providers.map((prov) => [prov.name, prov]));
  c.diskimages.forEach((d, i) => {
    if (!d.snapshot) return;
    const at = `diskimages[${i}].snapshot.provider`;
    const prov = providers.get(d.snapshot.provider);
    if (!prov) p.add(at, `provider ${JSON.stringify(d.snapshot.provider)} is not defined in providers`);
    else if (!driverConfigOf(prov).snapshotBuilds) {
      const able = DRIVER_NAMES.filter((n) => driverConfigs[n].snapshotBuilds).join(', ');
      p.add(at, `provider ${JSON.stringify(d.snapshot.provider)} (driver ${prov.driver}) cannot boot build instances: expected a provider of driver ${able}`);
    } else if (driverConfigOf(prov).snapshotBuilds?.usernameRequired && d.snapshot.username === undefined) {
      const base = d.snapshot.baseImage !== undefined ? `base-image ${JSON.stringify(d.snapshot.baseImage)}` : `base-diskimage ${JSON.stringify(d.snapshot.baseDiskimage)}`;
      p.add(`diskimages[${i}].snapshot`, `username is required on a provider of driver ${prov.driver}: the login user of ${base} (cloud-init's default user, e.g. debian)`);
    }
    const baseDiskimage = d.snapshot.baseDiskimage;
    if (baseDiskimage === undefined) return;
    const baseAt = `diskimages[${i}].snapshot.base-diskimage`;
    if (baseDiskimage === d.name) p.add(baseAt, 'a diskimage cannot be built on itself');
    else if (!c.diskimages.some((o) => o.name === baseDiskimage)) p.add(baseAt, `diskimage ${JSON.stringify(baseDiskimage)} is not defined in diskimages`);
    else if (prov && !(driverConfigOf(prov).imageTargets?.(prov) ?? []).some((t) => t.diskimage === baseDiskimage)) {
      p.add(baseAt, `provider ${JSON.stringify(prov.name)} does not take diskimage ${JSON.stringify(baseDiskimage)}, so it has no upload of it to boot: add it to the provider's diskimages`);
    }
  });
}
