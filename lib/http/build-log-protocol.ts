/**
 * The build log protocol between a builder's port (workers/builder/build-log-http.ts) and the
 * server's proxy (server/web/build-logs): `GET /build-logs/<build-id>?offset=N` answers at most
 * {@link BUILD_LOG_CHUNK_BYTES} from byte N, with the log's size and whether its build has ended
 * in two headers. Pure, apart from {@link newLogToken}.
 *
 * Each build has a log token of its own (issue 31 §9): the server makes it with the build record,
 * sends it to the builder in the `image-build` job (`log-token`, beside Nodepool's keys), and
 * reads the log with `Authorization: Bearer <log token>`; the builder answers that build's log to
 * that token only. A reader's own token never leaves the server.
 */
import { randomBytes } from 'node:crypto';

/** The path prefix of build logs on a builder's port. */
export const BUILD_LOG_PATH = '/build-logs/';
/** The most log bytes one answer carries; a reader follows with `offset`. */
export const BUILD_LOG_CHUNK_BYTES = 256 * 1024;
/** Response headers: the log's size in bytes when answered, and whether its build has ended. */
export const LOG_SIZE_HEADER = 'X-Log-Size';
export const LOG_COMPLETE_HEADER = 'X-Log-Complete';

/** A log token: base64url, 32 to 128 characters (ours are 32 random bytes, 43 characters). */
export const LOG_TOKEN_RE = /^[A-Za-z0-9_-]{32,128}$/;

/** A new build's log token: 32 random bytes, base64url. */
export function newLogToken(): string {
  return randomBytes(32).toString('base64url');
}

/** `?offset=N` as a byte offset (absent or empty: 0), or undefined when it is not one. */
export function parseOffset(raw: string | null): number | undefined {
  if (raw === null || raw === '') return 0;
  if (!/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}
