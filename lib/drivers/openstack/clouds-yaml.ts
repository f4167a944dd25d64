/**
 * The standard OpenStack `clouds.yaml`: find it, parse it, and turn one named cloud into
 * checked {@link CloudCredentials} (Keystone v3 password auth only). Every problem is
 * reported as a {@link ConfigError} naming the file and the key path.
 *
 * lib/ never reads `process.env`: the caller passes the search path, e.g. from
 * {@link standardSearchPaths}.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { ConfigError, type ConfigProblem } from '../../errors.js';
import { isSecretKey, isSecretPath, processSecrets, type SecretRegistry } from '../../redact.js';

/** Which endpoint of a catalog entry to use. */
export type EndpointInterface = 'public' | 'internal' | 'admin';

/** One cloud of a `clouds.yaml`, checked and with defaults applied. */
export interface CloudCredentials {
  /** The cloud's key under `clouds:` (for logs). */
  cloudName: string;
  /** Keystone URL, with or without the `/v3` suffix. */
  authUrl: string;
  username: string;
  password: string;
  /** Project scope, by name (with {@link projectDomainName}) or by id. */
  projectName?: string;
  projectId?: string;
  /** Domain scope (used only when no project is given). */
  domainName?: string;
  domainId?: string;
  /** The user's domain; `user_domain_name`, else `domain_name`, else `Default`. */
  userDomainName: string;
  userDomainId?: string;
  /** The project's domain; `project_domain_name`, else `domain_name`, else `Default`. */
  projectDomainName: string;
  projectDomainId?: string;
  /** Catalog region; absent = the first endpoint of the wanted interface. */
  regionName?: string;
  /** Catalog interface, `public` by default. */
  interface: EndpointInterface;
  /** Always `'3'`: only Keystone v3 is supported. */
  identityApiVersion: string;
  /** Verify TLS certificates (`verify: false` turns it off). */
  verify: boolean;
  /** CA bundle file for TLS (`cacert`). */
  cacert?: string;
}

/** Options of {@link loadCloud}. */
export interface LoadCloudOptions {
  /** An explicit clouds.yaml; it must exist. */
  path?: string;
  /** Candidates tried in order when no explicit path is given; see {@link standardSearchPaths}. */
  searchPaths?: string[];
}

/**
 * The usual clouds.yaml search order: `$OS_CLIENT_CONFIG_FILE`, `./clouds.yaml`,
 * `~/.config/openstack/clouds.yaml`, `/etc/openstack/clouds.yaml`. Pure: bin/ passes the
 * environment, home and working directory in.
 */
export function standardSearchPaths(ctx: { env: Readonly<Record<string, string | undefined>>; homeDir: string; cwd: string }): string[] {
  const paths: string[] = [];
  const explicit = ctx.env.OS_CLIENT_CONFIG_FILE;
  if (explicit) paths.push(explicit);
  paths.push(
    path.join(ctx.cwd, 'clouds.yaml'),
    path.join(ctx.homeDir, '.config', 'openstack', 'clouds.yaml'),
    '/etc/openstack/clouds.yaml',
  );
  return paths;
}

/**
 * Reads the clouds.yaml (explicit `path`, else the first of `searchPaths` that exists) and
 * returns the credentials of cloud `name`.
 * Thrown: {@link ConfigError} when no file is found, it is not valid YAML, the cloud is
 * missing, or a key is missing or of the wrong type.
 */
export async function loadCloud(name: string, opts: LoadCloudOptions = {}): Promise<CloudCredentials> {
  const { file, text } = await readCloudsYaml(opts);
  return parseCloudsYaml(text, file, name, processSecrets);
}

async function readCloudsYaml(opts: LoadCloudOptions): Promise<{ file: string; text: string }> {
  if (opts.path !== undefined) {
    try {
      return { file: opts.path, text: await readFile(opts.path, 'utf8') };
    } catch (err) {
      throw new ConfigError(opts.path, [{ path: '', message: `cannot read: ${(err as Error).message}` }], { cause: err });
    }
  }
  const candidates = opts.searchPaths ?? [];
  for (const candidate of candidates) {
    try {
      return { file: candidate, text: await readFile(candidate, 'utf8') };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new ConfigError(candidate, [{ path: '', message: `cannot read: ${(err as Error).message}` }], { cause: err });
    }
  }
  const where = candidates.length ? `looked in ${candidates.join(', ')}` : 'no path or search path given';
  throw new ConfigError('clouds.yaml', [{ path: '', message: `not found (${where})` }]);
}

/**
 * Every value under a secret key of this host's clouds.yaml (explicit `path`, else the first of
 * `searchPaths` that exists), read when the config is loaded so that the process scrubs them
 * from its logs, build logs and job failures before its first cloud call. Never throws: a file
 * that is missing or unreadable gives none (the first cloud call reports it); one that is not
 * valid YAML gives the values of its `key: value` lines under secret keys.
 */
export function cloudsYamlSecrets(opts: LoadCloudOptions): string[] {
  const candidates = opts.path !== undefined ? [opts.path] : opts.searchPaths ?? [];
  for (const file of candidates) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    const values: string[] = [];
    const add = (v: unknown): void => { if (typeof v === 'string' || typeof v === 'number') values.push(String(v)); };
    try {
      rememberSecrets(yaml.load(text, { filename: file }), { add });
    } catch {
      for (const m of text.matchAll(SECRET_LINE)) if (m[1] !== undefined && isSecretKey(m[1])) add(unquote(m[2] ?? ''));
    }
    return values.filter((v) => v !== '');
  }
  return [];
}

/** A `key: value` line of a YAML file (for one that does not parse). */
const SECRET_LINE = /^[\s-]*["']?([\w.-]+)["']?\s*:[ \t]*(\S[^\r\n]*?)[ \t]*$/gm;

function unquote(v: string): string {
  const q = v[0];
  return (q === '"' || q === "'") && v.endsWith(q) && v.length >= 2 ? v.slice(1, -1) : v;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** How a found value reads in a message; at a secret key path only its kind (`a number`), never the value. */
function describe(v: unknown, at?: string): string {
  if (v === undefined) return 'undefined';
  if (at !== undefined && isSecretPath(at) && v !== null) {
    return Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'a mapping' : `a ${typeof v}`;
  }
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  return `${typeof v} ${String(v)}`;
}

/** openstacksdk accepts `auth-url` as well as `auth_url`. */
function normalizeKeys(o: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) out[k.replace(/-/g, '_')] = v;
  return out;
}

/**
 * Adds the value of every secret key of `v` (any depth; a list's items too) to `secrets`.
 * A mapping under a secret key is walked like any other, so a cloud named `token-lab` does
 * not make its user and project names secrets.
 */
function rememberSecrets(v: unknown, secrets: Pick<SecretRegistry, 'add'>, secretKey = false): void {
  if (Array.isArray(v)) v.forEach((x) => rememberSecrets(x, secrets, secretKey));
  else if (isObj(v)) for (const [k, x] of Object.entries(v)) rememberSecrets(x, secrets, isSecretKey(k));
  else if (secretKey) secrets.add(v);
}

/**
 * Parses clouds.yaml text and returns cloud `name` (`file` is only used in messages). Every
 * value under a secret key of the file (passwords, application credential secrets, tokens),
 * valid or not, is added to `secrets` when given, so later messages can be scrubbed of it;
 * no message names one. Thrown: {@link ConfigError} listing every problem found.
 */
export function parseCloudsYaml(text: string, file: string, name: string, secrets?: SecretRegistry): CloudCredentials {
  let doc: unknown;
  try {
    doc = yaml.load(text, { filename: file });
  } catch (err) {
    // js-yaml's message quotes the lines around the fault, which may hold a password: give
    // the reason and the place only.
    const e = err as { reason?: string; mark?: { line: number; column: number } };
    const where = e.mark ? ` at line ${e.mark.line + 1}, column ${e.mark.column + 1}` : '';
    throw new ConfigError(file, [{ path: '', message: `invalid YAML${where}: ${e.reason ?? 'not YAML'}` }]);
  }
  if (secrets) rememberSecrets(doc, secrets);
  if (!isObj(doc) || !isObj(doc.clouds)) {
    throw new ConfigError(file, [{ path: 'clouds', message: `expected a mapping, got ${describe(isObj(doc) ? doc.clouds : doc)}` }]);
  }
  const base = `clouds.${name}`;
  const rawCloud = doc.clouds[name];
  if (!isObj(rawCloud)) {
    const known = Object.keys(doc.clouds).join(', ') || 'none';
    const message = rawCloud === undefined ? `no such cloud (clouds in this file: ${known})` : `expected a mapping, got ${describe(rawCloud)}`;
    throw new ConfigError(file, [{ path: base, message }]);
  }
  const cloud = normalizeKeys(rawCloud);
  const problems: ConfigProblem[] = [];
  const auth = isObj(cloud.auth) ? normalizeKeys(cloud.auth) : {};
  if (!isObj(cloud.auth)) problems.push({ path: `${base}.auth`, message: `expected a mapping, got ${describe(cloud.auth)}` });

  const str = (o: Obj, key: string, at: string, required: boolean): string | undefined => {
    const v = o[key];
    if (typeof v === 'string' && v !== '') return v;
    if (v === undefined && !required) return undefined;
    const hint = typeof v === 'number' ? ' (quote it in YAML)' : '';
    problems.push({ path: `${at}.${key}`, message: `expected string, got ${v === '' ? 'an empty string' : describe(v, `${at}.${key}`)}${hint}` });
    return undefined;
  };
  const authAt = `${base}.auth`;
  const authType = str(cloud, 'auth_type', base, false) ?? 'password';
  if (authType !== 'password' && authType !== 'v3password') {
    problems.push({ path: `${base}.auth_type`, message: `only password authentication is supported, got ${describe(authType)}` });
  }
  const authUrl = str(auth, 'auth_url', authAt, true);
  const username = str(auth, 'username', authAt, true);
  const password = str(auth, 'password', authAt, true);
  const projectName = str(auth, 'project_name', authAt, false) ?? str(auth, 'tenant_name', authAt, false);
  const projectId = str(auth, 'project_id', authAt, false) ?? str(auth, 'tenant_id', authAt, false);
  const domainName = str(auth, 'domain_name', authAt, false);
  const domainId = str(auth, 'domain_id', authAt, false);
  const userDomainName = str(auth, 'user_domain_name', authAt, false) ?? domainName ?? 'Default';
  const userDomainId = str(auth, 'user_domain_id', authAt, false);
  const projectDomainName = str(auth, 'project_domain_name', authAt, false) ?? domainName ?? 'Default';
  const projectDomainId = str(auth, 'project_domain_id', authAt, false);
  if (!projectName && !projectId && !domainName && !domainId && isObj(cloud.auth)) {
    problems.push({ path: authAt, message: 'needs a scope: project_name, project_id, domain_name or domain_id' });
  }
  if (authUrl !== undefined && !/^https?:\/\/[^/]/.test(authUrl)) {
    problems.push({ path: `${authAt}.auth_url`, message: `expected an http(s) URL, got ${describe(authUrl)}` });
  }

  let regionName = str(cloud, 'region_name', base, false);
  if (regionName === undefined && Array.isArray(cloud.regions)) {
    const regions: unknown[] = cloud.regions;
    const first: unknown = regions[0];
    const firstName = isObj(first) ? first.name : first;
    if (regions.length === 1 && typeof firstName === 'string') regionName = firstName;
    else problems.push({ path: `${base}.regions`, message: 'several regions: set region_name to pick one' });
  }

  const rawInterface = str(cloud, 'interface', base, false) ?? str(cloud, 'endpoint_type', base, false) ?? 'public';
  const itf = rawInterface.replace(/URL$/, '');
  if (itf !== 'public' && itf !== 'internal' && itf !== 'admin') {
    problems.push({ path: `${base}.interface`, message: `expected public, internal or admin, got ${describe(rawInterface)}` });
  }

  const rawVersion = cloud.identity_api_version ?? '3';
  const identityApiVersion = String(rawVersion);
  if (!/^3(\.0)?$/.test(identityApiVersion) || (typeof rawVersion !== 'string' && typeof rawVersion !== 'number')) {
    problems.push({ path: `${base}.identity_api_version`, message: `only Keystone v3 is supported, got ${describe(rawVersion)}` });
  }

  let verify = true;
  if (cloud.verify !== undefined) {
    if (typeof cloud.verify === 'boolean') verify = cloud.verify;
    else problems.push({ path: `${base}.verify`, message: `expected boolean, got ${describe(cloud.verify)}` });
  }
  const cacert = str(cloud, 'cacert', base, false);

  if (problems.length) throw new ConfigError(file, problems);
  const creds: CloudCredentials = {
    cloudName: name,
    authUrl: authUrl as string,
    username: username as string,
    password: password as string,
    userDomainName,
    projectDomainName,
    interface: itf as EndpointInterface,
    identityApiVersion: '3',
    verify,
  };
  const optionals = { projectName, projectId, domainName, domainId, userDomainId, projectDomainId, regionName, cacert };
  for (const [k, v] of Object.entries(optionals)) if (v !== undefined) Object.assign(creds, { [k]: v });
  return creds;
}
