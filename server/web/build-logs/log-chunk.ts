/**
 * Pure pieces of the build log proxy (issue 25 §2): reading `?offset`, the headers a builder
 * answers with, and a chunk of log bytes as the console's JSON `{offset, next, size, complete,
 * text}`, cut at a UTF-8 character boundary so that following `next` never splits a character.
 */
import { BUILD_LOG_CHUNK_BYTES, LOG_COMPLETE_HEADER, LOG_SIZE_HEADER } from '../../../lib/http/build-log-protocol.js';

export { LOG_COMPLETE_HEADER, LOG_SIZE_HEADER, parseOffset } from '../../../lib/http/build-log-protocol.js';

/** The most log bytes one answer carries (the builder's chunk). */
export const MAX_LOG_CHUNK_BYTES = BUILD_LOG_CHUNK_BYTES;

/** What the builder's headers say: the log's size and whether its build has ended (undefined when absent or malformed). */
export interface LogHeaders {
  size: number | undefined;
  complete: boolean | undefined;
}

/** Reads `X-Log-Size` and `X-Log-Complete` (node lower-cases header names). */
export function readLogHeaders(headers: Record<string, string | string[] | undefined>): LogHeaders {
  const one = (name: string): string | undefined => {
    const v = headers[name.toLowerCase()];
    return Array.isArray(v) ? v[0] : v;
  };
  const size = one(LOG_SIZE_HEADER);
  const complete = one(LOG_COMPLETE_HEADER);
  return {
    size: size !== undefined && /^\d{1,15}$/.test(size) ? Number(size) : undefined,
    complete: complete === 'true' ? true : complete === 'false' ? false : undefined,
  };
}

/** The console's view of one chunk. */
export interface LogChunkJson {
  /** The offset asked for. */
  offset: number;
  /** Where the next read starts (past the last whole character given). */
  next: number;
  /** The log's size when the builder answered. */
  size: number;
  /** The build has ended and `next` is the end of its log: nothing more will come. */
  complete: boolean;
  /** The bytes from `offset` to `next` as UTF-8. */
  text: string;
}

/**
 * A chunk as JSON. A character split by the chunk's end is left for the next read, unless the
 * chunk ends the log of an ended build (then its bytes read as U+FFFD: nothing follows them).
 * A chunk starting inside a character (an offset not from `next`) skips that character's tail.
 */
export function logChunkJson(offset: number, bytes: Buffer, size: number, buildEnded: boolean): LogChunkJson {
  const atEnd = offset + bytes.length >= size;
  let start = 0;
  while (start < bytes.length && start < 3 && isContinuation(bytes[start] as number) && offset > 0) start += 1;
  const end = buildEnded && atEnd ? bytes.length : wholeCharactersEnd(bytes, start);
  const next = offset + end;
  return { offset, next, size, complete: buildEnded && next >= size, text: bytes.toString('utf8', start, end) };
}

function isContinuation(b: number): boolean {
  return (b & 0xc0) === 0x80;
}

/** The length of `bytes` without a trailing incomplete UTF-8 sequence (at most 3 bytes are dropped). */
export function wholeCharactersEnd(bytes: Buffer, from = 0): number {
  const n = bytes.length;
  for (let i = n - 1; i >= Math.max(from, n - 4); i -= 1) {
    const b = bytes[i] as number;
    if (isContinuation(b)) continue;
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return n - i >= need ? n : i;
  }
  return n;
}
