/**
 * The build log protocol between a builder's port (workers/builder/build-log-http.ts) and the
 * server's proxy (server/web/build-logs): `GET /build-logs/<build-id>?offset=N` answers at most
 * {@link BUILD_LOG_CHUNK_BYTES} from byte N, with the log's size and whether its build has ended
 * in two headers. Pure.
 */

/** The path prefix of build logs on a builder's port. */
export const BUILD_LOG_PATH = '/build-logs/';
/** The most log bytes one answer carries; a reader follows with `offset`. */
export const BUILD_LOG_CHUNK_BYTES = 256 * 1024;
/** Response headers: the log's size in bytes when answered, and whether its build has ended. */
export const LOG_SIZE_HEADER = 'X-Log-Size';
export const LOG_COMPLETE_HEADER = 'X-Log-Complete';

/** `?offset=N` as a byte offset (absent or empty: 0), or undefined when it is not one. */
export function parseOffset(raw: string | null): number | undefined {
  if (raw === null || raw === '') return 0;
  if (!/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}
