/**
 * A builder's build logs over HTTP (issue 25 §2): `GET /build-logs/<build-id>?offset=N` on its
 * metrics port answers the bytes of `<build-log-dir>/<build-id>.log` from `offset` up to
 * {@link BUILD_LOG_CHUNK_BYTES}, streamed from the file, with `X-Log-Size` (the file's size now)
 * and `X-Log-Complete` (whether the build has ended here). The id is validated before any path
 * is built from it. Logs never pass through the store: the server fetches them from here.
 * A log is answered only to its build's log token (`Authorization: Bearer <log token>`,
 * log-token.ts; issue 31 §9), which the server holds: 401 to anyone else.
 */
import type http from 'node:http';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { coerceError } from '../../lib/errors.js';
import { parseImageId } from '../../lib/images/image-file.js';
import type { Logger } from '../../lib/log.js';
import { bearerMatches, readLogToken } from './log-token.js';
import { BUILD_LOG_CHUNK_BYTES, BUILD_LOG_PATH, LOG_COMPLETE_HEADER, LOG_SIZE_HEADER, parseOffset } from '../../lib/http/build-log-protocol.js';

export { BUILD_LOG_CHUNK_BYTES, BUILD_LOG_PATH } from '../../lib/http/build-log-protocol.js';

/** What serving a build log needs from the builder. */
export interface BuildLogSource {
  /** The build-log-dir now (read at each request: reloads apply). */
  dir: () => string;
  /** Whether the build `id` runs here now (its log may still grow). */
  isBuilding: (id: string) => boolean;
}

/** A validated build log request, or the answer refusing it. */
export type BuildLogRequest =
  | { ok: true; id: string; offset: number }
  | { ok: false; status: 400; message: string };

/** Reads the build id (the path after {@link BUILD_LOG_PATH}, percent-decoded) and `?offset` (pure). */
export function parseBuildLogRequest(pathname: string, query: URLSearchParams): BuildLogRequest {
  let id: string;
  try {
    id = decodeURIComponent(pathname.slice(BUILD_LOG_PATH.length));
  } catch {
    return { ok: false, status: 400, message: 'invalid build id: bad percent-encoding' };
  }
  try {
    parseImageId(id);
  } catch (err) {
    return { ok: false, status: 400, message: coerceError(err).message.replace(/^invalid image id/, 'invalid build id') };
  }
  const raw = query.get('offset');
  const offset = parseOffset(raw);
  if (offset === undefined) return { ok: false, status: 400, message: `offset must be a byte offset (a non-negative integer), got ${JSON.stringify(raw?.slice(0, 40))}` };
  return { ok: true, id, offset };
}

/**
 * Answers `GET|HEAD /build-logs/<id>` on `res`: 200 with the chunk, 400 for a bad id or offset,
 * 401 (`WWW-Authenticate: Bearer`) without the build's log token, 404 when no log of that id is
 * here, 416 for an offset past the end (with `X-Log-Size`).
 */
export async function serveBuildLog(req: http.IncomingMessage, res: http.ServerResponse, url: { pathname: string; searchParams: URLSearchParams }, source: BuildLogSource, log: Logger): Promise<void> {
  const plain = (status: number, message: string, headers: Record<string, string> = {}): void => {
    const body = `${message}\n`;
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', ...headers });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  const parsed = parseBuildLogRequest(url.pathname, url.searchParams);
  if (!parsed.ok) return plain(parsed.status, parsed.message);
  const { id, offset } = parsed;
  const refused = await tokenRefusal(source.dir(), id, req.headers.authorization);
  if (refused) return plain(401, refused, { 'WWW-Authenticate': 'Bearer' });
  // Read before the file: once a build is seen ended, its log is closed and every byte is in the file.
  const complete = !source.isBuilding(id);
  let fh: FileHandle;
  try {
    fh = await open(path.join(source.dir(), `${id}.log`), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return plain(404, `no build log of ${id} here`);
    throw err;
  }
  let streaming = false;
  try {
    const { size } = await fh.stat();
    const headers = { [LOG_SIZE_HEADER]: String(size), [LOG_COMPLETE_HEADER]: String(complete), 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' };
    if (offset > size) return plain(416, `offset ${offset} is past the end of the log of ${id} (${size} bytes)`, { ...headers, 'Content-Range': `bytes */${size}` });
    const length = Math.min(BUILD_LOG_CHUNK_BYTES, size - offset);
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': length, ...headers });
    if (req.method === 'HEAD' || length === 0) {
      res.end();
      return;
    }
    // The file may grow meanwhile: only the `length` bytes counted above are sent.
    const stream = fh.createReadStream({ start: offset, end: offset + length - 1, autoClose: true });
    streaming = true;
    stream.on('error', (err) => {
      log.warn('build log read failed', { buildId: id, error: err.message });
      res.destroy(err);
    });
    res.on('close', () => stream.destroy());
    stream.pipe(res);
  } finally {
    if (!streaming) await fh.close();
  }
}

/** Why build `id`'s log is not answered to `authorization`, or undefined when it carries the build's log token. */
async function tokenRefusal(dir: string, id: string, authorization: string | undefined): Promise<string | undefined> {
  const token = await readLogToken(dir, id);
  if (token === undefined) {
    return `the log of ${id} is not served: this builder holds no log token for it (built before build logs had tokens, or for a server that sends none)`;
  }
  if (authorization === undefined) {
    return `the log of ${id} is answered only to its build's log token (Authorization: Bearer …), which the nodepool server holds: read it through the server's /api/build/${id}/log`;
  }
  return bearerMatches(token, authorization) ? undefined : `the token given is not the log token of ${id}`;
}
