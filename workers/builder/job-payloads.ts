/**
 * Validation of Gearman job payloads (pure). Every failure is an InvalidJobError (WORK_FAIL)
 * with a message that says what was wrong; no path is touched before this has passed.
 */
import { InvalidJobError } from '../../lib/errors.js';
import { LOG_TOKEN_RE } from '../../lib/http/build-log-protocol.js';
import { isImageFormat, parseImageId } from '../../lib/images/image-file.js';
import { INSTALLATION_ID_RE } from '../../lib/store/installation.js';

/** A validated `image-build:<diskimage>` request. */
export interface BuildRequest {
  imageId: string;
  diskimage: string;
  /**
   * When the server created the build record (epoch ms; optional, Nodepool 0.3.x sends none):
   * files of the same id from another record are not this build.
   */
  created?: number;
  /** The server's store installation id (optional, Nodepool 0.3.x sends none): recorded in the sidecar. */
  installation?: string;
  /**
   * The build's log token (`log-token`, issue 31 §9; optional, Nodepool 0.3.x and servers before
   * it send none): the builder's port answers the build's log only to `Authorization: Bearer <it>`.
   */
  logToken?: string;
  /**
   * What a snapshot build on another diskimage (`snapshot.base-diskimage`) boots: the external id
   * of that diskimage's newest ready upload to the build's provider, found by the server.
   */
  baseImage?: string;
}

/** A validated `image-upload:<id>` request. */
export interface UploadRequest {
  imageId: string;
  imageName: string;
  provider: string;
  /** Optional extras: the server's upload id, an exact cloud name, extra image properties. */
  uploadId?: string;
  externalName?: string;
  meta: Record<string, string>;
  /** The sending server's installation id: refused when the files were built for another. */
  installation?: string;
}

/** A validated `image-delete:<id>` request. */
export interface DeleteRequest {
  /** The sending server's installation id: refused when the files were built for another. */
  installation?: string;
  /**
   * Only these formats' local files (`delete-after-upload`): the build itself stays. Absent:
   * the whole build, as every payload before this key.
   */
  formats?: string[];
}

const MAX_PAYLOAD = 64 * 1024;
/** 1-255 characters, none of them a control character. */
function isPrintableName(s: string): boolean {
  return s.length >= 1 && s.length <= 255 && ![...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
}

function parseObject(data: Buffer, what: string): Record<string, unknown> {
  if (data.length > MAX_PAYLOAD) throw new InvalidJobError(`${what} payload is ${data.length} bytes, more than ${MAX_PAYLOAD}`);
  let v: unknown;
  try {
    v = JSON.parse(data.toString('utf8'));
  } catch {
    throw new InvalidJobError(`${what} payload is not JSON: ${JSON.stringify(data.toString('utf8').slice(0, 80))}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new InvalidJobError(`${what} payload must be a JSON object, got ${Array.isArray(v) ? 'a list' : JSON.stringify(v)}`);
  }
  return v as Record<string, unknown>;
}

function optionalString(o: Record<string, unknown>, key: string, what: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !isPrintableName(v)) throw new InvalidJobError(`${what} payload: "${key}" must be a string of 1-255 printable characters`);
  return v;
}

/** The optional `installation` key: a UUID when present. */
function installationOf(o: Record<string, unknown>, what: string): { installation?: string } {
  const v = o.installation;
  if (v === undefined || v === null) return {};
  if (typeof v !== 'string' || !INSTALLATION_ID_RE.test(v)) throw new InvalidJobError(`${what} payload: "installation" must be an installation id (a UUID), got ${JSON.stringify(v).slice(0, 80)}`);
  return { installation: v };
}

/** `{"image-id": "<diskimage>-<10 digits>"}` (+ optional `created`, `installation`, `log-token`, `base-image`) for function `image-build:<diskimage>`. */
export function parseBuildPayload(data: Buffer, diskimage: string, known: ReadonlySet<string>): BuildRequest {
  const o = parseObject(data, 'image-build');
  if (!('image-id' in o)) throw new InvalidJobError('image-build payload: missing "image-id"');
  const id = parseImageId(o['image-id'], known);
  if (id.diskimage !== diskimage) {
    throw new InvalidJobError(`image-build:${diskimage} payload: image id ${id.id} belongs to diskimage ${id.diskimage}`);
  }
  const created = o.created;
  if (created !== undefined && !(typeof created === 'number' && Number.isSafeInteger(created) && created >= 0)) {
    throw new InvalidJobError(`image-build payload: "created" must be epoch milliseconds, got ${JSON.stringify(created)}`);
  }
  const logToken = o['log-token'];
  if (logToken !== undefined && logToken !== null && !(typeof logToken === 'string' && LOG_TOKEN_RE.test(logToken))) {
    // The value is not quoted: it may be a secret, even a malformed one.
    throw new InvalidJobError('image-build payload: "log-token" must be 32-128 base64url characters');
  }
  const baseImage = optionalString(o, 'base-image', 'image-build');
  return {
    imageId: id.id, diskimage, ...(created !== undefined ? { created } : {}), ...installationOf(o, 'image-build'),
    ...(typeof logToken === 'string' ? { logToken } : {}), ...(baseImage !== undefined ? { baseImage } : {}),
  };
}

/** `{"image-name", "provider"}` (+ optional `upload-id`, `external-name`, `meta`, `installation`) for `image-upload:<id>`. */
export function parseUploadPayload(data: Buffer, imageId: string): UploadRequest {
  const o = parseObject(data, 'image-upload');
  const imageName = optionalString(o, 'image-name', 'image-upload');
  const provider = optionalString(o, 'provider', 'image-upload');
  if (imageName === undefined) throw new InvalidJobError('image-upload payload: missing "image-name"');
  if (provider === undefined) throw new InvalidJobError('image-upload payload: missing "provider"');
  const meta: Record<string, string> = {};
  if (o.meta !== undefined) {
    if (typeof o.meta !== 'object' || o.meta === null || Array.isArray(o.meta)) throw new InvalidJobError('image-upload payload: "meta" must be an object');
    for (const [k, v] of Object.entries(o.meta)) {
      if (typeof v !== 'string') throw new InvalidJobError(`image-upload payload: meta.${k} must be a string`);
      meta[k] = v;
    }
  }
  const req: UploadRequest = { imageId, imageName, provider, meta, ...installationOf(o, 'image-upload') };
  const uploadId = optionalString(o, 'upload-id', 'image-upload');
  const externalName = optionalString(o, 'external-name', 'image-upload');
  if (uploadId !== undefined) req.uploadId = uploadId;
  if (externalName !== undefined) req.externalName = externalName;
  return req;
}

/** `""` (Nodepool 0.3.x), `{}`, nothing, or `{"installation", "formats"}` (both optional), for `image-delete:<id>`. */
export function parseDeletePayload(data: Buffer): DeleteRequest {
  const text = data.toString('utf8').trim();
  if (text === '' || text === '""' || text === '{}' || text === 'null') return {};
  const o = parseObject(data, 'image-delete');
  const req: DeleteRequest = installationOf(o, 'image-delete');
  if (o.formats !== undefined) {
    const f = o.formats;
    if (!Array.isArray(f) || f.length === 0 || !f.every((x) => typeof x === 'string' && isImageFormat(x))) {
      throw new InvalidJobError(`image-delete payload: "formats" must be a non-empty list of image formats, got ${JSON.stringify(f).slice(0, 80)}`);
    }
    req.formats = [...new Set(f as string[])];
  }
  return req;
}
