/**
 * The field-by-field validator of image data documents (lib/store/image-data.ts): every
 * problem with its path, so an operator fixes a file in one pass. Pure.
 */
import { IMAGE_FIELD_KEYS } from './image-fields.js';
import { DISKIMAGE_NAME_RE, IMAGE_ID_RE, UPLOAD_ID_RE } from '../images/image-file.js';
import { InvalidImageDataError, type ImageDataProblem } from '../errors.js';
import {
  buildIdSequence, IMAGE_DATA_FORMAT, IMAGE_DATA_VERSION, uploadIdSequence, type ImageData, type ImageDataSequences,
} from './image-data.js';
import { INSTALLATION_ID_RE } from './installation.js';
import { BUILD_STATES, ROLLOUT_STATES, UPLOAD_STATES } from './models.js';

/** Largest sequence value (ids have 10 digits). */
const MAX_SEQUENCE = 9_999_999_999;

/**
 * Checks a parsed image data document field by field and returns it typed.
 * Thrown: {@link InvalidImageDataError} listing every problem with its path.
 */
export function parseImageData(value: unknown): ImageData {
  const problems = checkImageData(value);
  if (problems.length > 0) throw new InvalidImageDataError(problems);
  return value as ImageData;
}

/** Every problem of a parsed image data document (empty when it is valid). */
export function checkImageData(value: unknown): ImageDataProblem[] {
  const c = new Checker();
  if (!c.object(value, '')) return c.problems;
  if (value.format !== IMAGE_DATA_FORMAT) {
    c.problem('format', `expected ${JSON.stringify(IMAGE_DATA_FORMAT)}, got ${show(value.format)} (not a nodepool image data file)`);
    return c.problems;
  }
  if (value.version !== IMAGE_DATA_VERSION) {
    const newer = typeof value.version === 'number' && value.version > IMAGE_DATA_VERSION;
    c.problem('version', newer
      ? `version ${value.version} is newer than this nodepool reads (${IMAGE_DATA_VERSION}); upgrade nodepool`
      : `expected ${IMAGE_DATA_VERSION}, got ${show(value.version)}`);
    return c.problems;
  }
  const { installation: _optional, pins: _pins, revocations: _revocations, uploadRetries: _retries, ...required } = value;
  c.fields(required, '', ['format', 'version', 'exported', 'builds', 'uploads', 'pauses', 'buildRequests', 'sequences']);
  c.time(value.exported, 'exported');
  if (value.installation !== undefined && !(typeof value.installation === 'string' && INSTALLATION_ID_RE.test(value.installation))) {
    c.problem('installation', `expected an installation id (a UUID), got ${show(value.installation)}`);
  }
  const sequences = checkSequences(c, value.sequences);
  const builds = new Map<string, string>();
  c.list(value.builds, 'builds', (b, p) => {
    const id = checkBuild(c, b, p);
    if (id === undefined) return;
    if (builds.has(id.id)) c.problem(`${p}.id`, `build ${id.id} appears twice (also ${builds.get(id.id)})`);
    else builds.set(id.id, p);
    const seq = sequences?.build[id.diskimage];
    if (sequences && id.sequence > 0 && (seq === undefined || seq < id.sequence)) {
      c.problem(`${p}.id`, `build ${id.id} is past sequences.build[${JSON.stringify(id.diskimage)}] (${seq ?? 'missing'})`);
    }
  });
  const uploads = new Map<string, string>();
  c.list(value.uploads, 'uploads', (u, p) => {
    const ok = checkUpload(c, u, p);
    if (!ok) return;
    if (uploads.has(ok.id)) c.problem(`${p}.id`, `upload ${ok.id} appears twice (also ${uploads.get(ok.id)})`);
    else uploads.set(ok.id, p);
    if (sequences && sequences.upload < uploadIdSequence(ok.id)) c.problem(`${p}.id`, `upload ${ok.id} is past sequences.upload (${sequences.upload})`);
    const buildPath = builds.get(ok.buildId);
    if (buildPath === undefined) c.problem(`${p}.buildId`, `build ${ok.buildId} is not in builds`);
    else if (IMAGE_ID_RE.exec(ok.buildId)?.[1] !== ok.diskimage) {
      c.problem(`${p}.diskimage`, `${ok.diskimage} is not the diskimage of build ${ok.buildId}`);
    } else if (!uploadFitsBuild(ok.id, ok.buildId, ok.provider)) {
      c.problem(`${p}.id`, `upload ${ok.id} cannot be an upload of build ${ok.buildId} to ${ok.provider}`);
    }
  });
  const pauses = new Set<string>();
  c.list(value.pauses, 'pauses', (x, p) => {
    if (!c.object(x, p)) return;
    c.fields(x, p, ['diskimage', 'provider', 'since', 'reason']);
    c.name(x.diskimage, `${p}.diskimage`);
    if (x.provider !== null) c.nonEmpty(x.provider, `${p}.provider`, 'a provider name or null');
    c.time(x.since, `${p}.since`);
    c.stringOrNull(x.reason, `${p}.reason`);
    const key = JSON.stringify([x.diskimage, x.provider]);
    if (pauses.has(key)) c.problem(p, `a second pause of ${show(x.diskimage)}${x.provider === null ? '' : ` on ${show(x.provider)}`}`);
    pauses.add(key);
  });
  const requests = new Set<unknown>();
  c.list(value.buildRequests, 'buildRequests', (x, p) => {
    if (!c.object(x, p)) return;
    c.fields(x, p, ['diskimage', 'requested']);
    c.name(x.diskimage, `${p}.diskimage`);
    c.time(x.requested, `${p}.requested`);
    if (requests.has(x.diskimage)) c.problem(p, `a second build request for ${show(x.diskimage)}`);
    requests.add(x.diskimage);
  });
  checkRollout(c, value);
  const retries = new Set<string>();
  c.list(value.uploadRetries, 'uploadRetries', (x, p) => {
    if (!c.object(x, p)) return;
    c.fields(x, p, ['diskimage', 'provider', 'requested']);
    c.name(x.diskimage, `${p}.diskimage`);
    c.nonEmpty(x.provider, `${p}.provider`, 'a provider name');
    c.time(x.requested, `${p}.requested`);
    const key = JSON.stringify([x.diskimage, x.provider]);
    if (retries.has(key)) c.problem(p, `a second upload retry request of ${show(x.diskimage)} on ${show(x.provider)}`);
    retries.add(key);
  });
  return c.problems;
}

/** The optional pins and revocations (issue 24): each names a build of its diskimage, once per key. */
function checkRollout(c: Checker, value: Obj): void {
  const pins = new Set<string>();
  c.list(value.pins, 'pins', (x, p) => {
    if (!c.object(x, p)) return;
    c.fields(x, p, ['diskimage', 'provider', 'buildId', 'since', 'reason']);
    if (x.provider !== null) c.nonEmpty(x.provider, `${p}.provider`, 'a provider name or null');
    checkBuildOf(c, x, p);
    const key = JSON.stringify([x.diskimage, x.provider]);
    if (pins.has(key)) c.problem(p, `a second pin of ${show(x.diskimage)}${x.provider === null ? '' : ` on ${show(x.provider)}`}`);
    pins.add(key);
  });
  const revocations = new Set<unknown>();
  c.list(value.revocations, 'revocations', (x, p) => {
    if (!c.object(x, p)) return;
    c.fields(x, p, ['diskimage', 'buildId', 'since', 'reason']);
    checkBuildOf(c, x, p);
    if (revocations.has(x.buildId)) c.problem(p, `a second revocation of ${show(x.buildId)}`);
    revocations.add(x.buildId);
  });
}

/** A pin's or revocation's diskimage, build id (one of that diskimage), since and reason. */
function checkBuildOf(c: Checker, x: Obj, p: string): void {
  if (c.name(x.diskimage, `${p}.diskimage`) && IMAGE_ID_RE.exec(typeof x.buildId === 'string' ? x.buildId : '')?.[1] !== x.diskimage) {
    c.problem(`${p}.buildId`, `expected a build id of ${show(x.diskimage)}, got ${show(x.buildId)}`);
  }
  c.time(x.since, `${p}.since`);
  c.stringOrNull(x.reason, `${p}.reason`);
}

function checkSequences(c: Checker, value: unknown): ImageDataSequences | undefined {
  const p = 'sequences';
  if (!c.object(value, p)) return undefined;
  c.fields(value, p, ['build', 'upload']);
  let ok = c.sequence(value.upload, `${p}.upload`);
  if (c.object(value.build, `${p}.build`)) {
    for (const [d, n] of Object.entries(value.build)) {
      if (!DISKIMAGE_NAME_RE.test(d)) {
        c.problem(`${p}.build`, `${show(d)} is not a diskimage name`);
        ok = false;
      }
      ok = c.sequence(n, `${p}.build[${JSON.stringify(d)}]`) && ok;
    }
  } else ok = false;
  return ok ? value as unknown as ImageDataSequences : undefined;
}

/** Checks the optional image fields and returns the record without them (for the exact-fields check). */
function withoutImageFields(c: Checker, r: Obj, p: string): Obj {
  const rest = { ...r };
  for (const k of IMAGE_FIELD_KEYS) {
    if (!(k in r)) continue;
    c.stringOrNull(r[k], `${p}.${k}`);
    delete rest[k];
  }
  return rest;
}

/** Checks an upload's optional rollout fields (issue 24) and returns the record without them. */
function withoutRolloutFields(c: Checker, r: Obj, p: string): Obj {
  const { launches, launchFailures, rollout, ...rest } = r;
  c.count(launches, `${p}.launches`);
  c.count(launchFailures, `${p}.launchFailures`);
  if (rollout !== undefined && rollout !== null && c.object(rollout, `${p}.rollout`)) {
    c.fields(rollout, `${p}.rollout`, ['state', 'time', 'reason']);
    c.oneOf(rollout.state, `${p}.rollout.state`, ROLLOUT_STATES);
    c.time(rollout.time, `${p}.rollout.time`);
    c.stringOrNull(rollout.reason, `${p}.rollout.reason`);
  }
  return rest;
}

/**
 * Whether upload id `id` may belong to build `buildId` and `provider`: a store-wide 10-digit
 * id to one of ours; `<hex>-<provider>-<seq>` only to the uuid build `hex`, to that provider.
 */
function uploadFitsBuild(id: string, buildId: string, provider: string): boolean {
  const m = UPLOAD_ID_RE.exec(id);
  const build = IMAGE_ID_RE.exec(buildId)?.[2];
  if (!m || build === undefined) return false;
  if (m[1] === undefined) return build.length === 10;
  return m[1] === build && m[2] === provider;
}

function checkBuild(c: Checker, b: unknown, p: string): { id: string; diskimage: string; sequence: number } | undefined {
  if (!c.object(b, p)) return undefined;
  c.fields(withoutImageFields(c, b, p), p, ['id', 'diskimage', 'state', 'stateTime', 'created', 'builderHostname', 'builderId', 'formats', 'files', 'reason', 'progress']);
  c.oneOf(b.state, `${p}.state`, BUILD_STATES);
  c.time(b.stateTime, `${p}.stateTime`);
  c.time(b.created, `${p}.created`);
  c.stringOrNull(b.builderHostname, `${p}.builderHostname`);
  c.stringOrNull(b.builderId, `${p}.builderId`);
  c.stringList(b.formats, `${p}.formats`);
  c.list(b.files, `${p}.files`, (f, fp) => {
    if (!c.object(f, fp)) return;
    c.fields(f, fp, ['format', 'size', 'sha256']);
    c.nonEmpty(f.format, `${fp}.format`, 'a format');
    c.count(f.size, `${fp}.size`);
    c.string(f.sha256, `${fp}.sha256`);
  });
  c.stringOrNull(b.reason, `${p}.reason`);
  c.progress(b.progress, `${p}.progress`, ['numerator', 'denominator']);
  const nameOk = c.name(b.diskimage, `${p}.diskimage`);
  const m = typeof b.id === 'string' ? IMAGE_ID_RE.exec(b.id) : null;
  if (typeof b.id !== 'string' || !m) {
    c.problem(`${p}.id`, `expected <diskimage>-<10 digits or 32 hex>, got ${show(b.id)}`);
    return undefined;
  }
  if (!nameOk) return undefined;
  const diskimage = b.diskimage as string;
  if (m[1] !== diskimage) {
    c.problem(`${p}.id`, `build ${b.id} is not a build of diskimage ${diskimage}`);
    return undefined;
  }
  return { id: b.id, diskimage, sequence: buildIdSequence(b.id) };
}

function checkUpload(c: Checker, u: unknown, p: string): { id: string; buildId: string; diskimage: string; provider: string } | undefined {
  if (!c.object(u, p)) return undefined;
  c.fields(withoutRolloutFields(c, withoutImageFields(c, u, p), p), p, ['id', 'buildId', 'diskimage', 'provider', 'imageName', 'state', 'stateTime', 'created',
    'externalId', 'externalName', 'format', 'reason', 'progress']);
  c.nonEmpty(u.provider, `${p}.provider`, 'a provider name');
  c.nonEmpty(u.imageName, `${p}.imageName`, 'an image name');
  c.oneOf(u.state, `${p}.state`, UPLOAD_STATES);
  c.time(u.stateTime, `${p}.stateTime`);
  c.time(u.created, `${p}.created`);
  c.stringOrNull(u.externalId, `${p}.externalId`);
  c.stringOrNull(u.externalName, `${p}.externalName`);
  c.stringOrNull(u.format, `${p}.format`);
  c.stringOrNull(u.reason, `${p}.reason`);
  c.progress(u.progress, `${p}.progress`, ['numerator', 'denominator', 'rate', 'sampledAt']);
  const buildOk = typeof u.buildId === 'string' && IMAGE_ID_RE.test(u.buildId);
  if (!buildOk) c.problem(`${p}.buildId`, `expected <diskimage>-<10 digits or 32 hex>, got ${show(u.buildId)}`);
  const nameOk = c.name(u.diskimage, `${p}.diskimage`);
  if (typeof u.id !== 'string' || !UPLOAD_ID_RE.test(u.id)) {
    c.problem(`${p}.id`, `expected 10 digits or <build hex>-<provider>-<10 digits>, got ${show(u.id)}`);
    return undefined;
  }
  return buildOk && nameOk && typeof u.provider === 'string'
    ? { id: u.id, buildId: u.buildId as string, diskimage: u.diskimage as string, provider: u.provider } : undefined;
}

type Obj = Record<string, unknown>;

/** Collects problems; each check returns whether the value passed. */
class Checker {
  readonly problems: ImageDataProblem[] = [];

  problem(path: string, message: string): void {
    this.problems.push({ path, message });
  }

  object(v: unknown, path: string): v is Obj {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return true;
    this.problem(path, `expected an object, got ${show(v)}`);
    return false;
  }

  /** Every field in `known` must be present, and no other. */
  fields(v: Obj, path: string, known: readonly string[]): void {
    const at = (k: string): string => (path ? `${path}.${k}` : k);
    for (const k of known) if (!(k in v)) this.problem(at(k), 'missing');
    for (const k of Object.keys(v)) if (!known.includes(k)) this.problem(at(k), 'unexpected field');
  }

  list(v: unknown, path: string, each: (item: unknown, itemPath: string) => void): void {
    if (v === undefined) return; // reported by fields()
    if (!Array.isArray(v)) {
      this.problem(path, `expected an array, got ${show(v)}`);
      return;
    }
    v.forEach((item, i) => each(item, `${path}[${i}]`));
  }

  string(v: unknown, path: string): boolean {
    if (typeof v === 'string') return true;
    if (v !== undefined) this.problem(path, `expected a string, got ${show(v)}`);
    return false;
  }

  nonEmpty(v: unknown, path: string, what: string): boolean {
    if (typeof v === 'string' && v !== '') return true;
    if (v !== undefined) this.problem(path, `expected ${what}, got ${show(v)}`);
    return false;
  }

  stringOrNull(v: unknown, path: string): void {
    if (v !== null) this.string(v, path);
  }

  stringList(v: unknown, path: string): void {
    this.list(v, path, (s, sp) => this.string(s, sp));
  }

  name(v: unknown, path: string): boolean {
    if (typeof v === 'string' && DISKIMAGE_NAME_RE.test(v)) return true;
    if (v !== undefined) this.problem(path, `expected a diskimage name, got ${show(v)}`);
    return false;
  }

  oneOf(v: unknown, path: string, allowed: readonly string[]): void {
    if (v === undefined || (typeof v === 'string' && allowed.includes(v))) return;
    this.problem(path, `expected one of ${allowed.join(', ')}, got ${show(v)}`);
  }

  /** Epoch milliseconds. */
  time(v: unknown, path: string): void {
    if (v === undefined || (Number.isSafeInteger(v) && (v as number) >= 0)) return;
    this.problem(path, `expected a time (epoch milliseconds), got ${show(v)}`);
  }

  count(v: unknown, path: string): void {
    if (v === undefined || (Number.isSafeInteger(v) && (v as number) >= 0)) return;
    this.problem(path, `expected an integer >= 0, got ${show(v)}`);
  }

  sequence(v: unknown, path: string): boolean {
    if (Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= MAX_SEQUENCE) return true;
    if (v !== undefined) this.problem(path, `expected an integer from 0 to ${MAX_SEQUENCE}, got ${show(v)}`);
    return false;
  }

  /** null, or an object of finite numbers (or null) with `numerator` and `denominator` required. */
  progress(v: unknown, path: string, known: readonly string[]): void {
    if (v === null || v === undefined || !this.object(v, path)) return;
    for (const k of ['numerator', 'denominator']) if (!(k in v)) this.problem(`${path}.${k}`, 'missing');
    for (const [k, x] of Object.entries(v)) {
      if (!known.includes(k)) this.problem(`${path}.${k}`, 'unexpected field');
      else if (!(typeof x === 'number' && Number.isFinite(x)) && !(x === null && k === 'rate')) {
        this.problem(`${path}.${k}`, `expected a number, got ${show(x)}`);
      }
    }
  }
}

/** A short rendering of a value for a message. */
function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'an array';
  if (v === null || typeof v !== 'object') {
    const text = JSON.stringify(v) ?? String(v);
    return text.length > 60 ? `${text.slice(0, 57)}…` : text;
  }
  return 'an object';
}
