/**
 * Routes the web server answers besides its built-in lists and health (issue 25): the write
 * API, build logs and the console pages register here as {@link Route}s, each a method, a path
 * pattern with `:name` segments, and a handler answering an {@link Answer}. Matching is pure:
 * {@link matchRoute} says which route answers, or which methods the path allows.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestPath } from '../../lib/http/request-path.js';

/** A response before it is sent. */
export interface Answer {
  status: number;
  contentType: string;
  body: string | Buffer;
  headers?: Record<string, string>;
}

export type RouteMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A request as a route sees it. */
export interface WebRequest {
  method: string;
  url: RequestPath;
  headers: IncomingHttpHeaders;
  /** The peer's address (for the audit trail). */
  remoteAddress: string;
  /**
   * The request body, read once, at most `limit` bytes (default {@link MAX_BODY_BYTES});
   * rejects with `BodyTooLargeError` (lib/errors) beyond (the server answers 413).
   */
  body(limit?: number): Promise<Buffer>;
}

/** Bodies of write requests are small JSON objects. */
export const MAX_BODY_BYTES = 64 * 1024;

export interface Route {
  method: RouteMethod;
  /** `/api/image/:diskimage/build`: literal segments, and `:name` segments matching one non-empty segment (decoded). */
  pattern: string;
  handle(req: WebRequest, params: Record<string, string>): Promise<Answer>;
}

/** A write (any method but GET and HEAD) no route took: a path or method no route answers, or headers too large to read (431). */
export interface UnroutedWrite {
  remote: string;
  /** `?` when the request could not be read. */
  method: string;
  path: string;
  status: number;
  reason: 'unrouted' | 'header-too-large';
}

/**
 * Counts an {@link UnroutedWrite} with the write API's refusals (server/web/api/refusal-ledger.ts);
 * answers the seconds to send with a 429 when its source is over its limit, else undefined.
 */
export type UnroutedSink = (write: UnroutedWrite) => number | undefined;

/** What a module of routes gives the web server: its routes, what to stop with the server, and where unrouted writes are counted. */
export interface WebModule {
  routes: Route[];
  stop?: () => Promise<void>;
  unrouted?: UnroutedSink;
}

/** The route answering `method` on `pathname` (HEAD as GET), or the methods the path allows, or nothing. */
export function matchRoute(
  routes: readonly Route[], method: string, pathname: string,
): { route: Route; params: Record<string, string> } | { allowed: RouteMethod[] } | undefined {
  const wanted = method === 'HEAD' ? 'GET' : method;
  const segments = pathname.split('/').filter((s) => s !== '');
  const allowed: RouteMethod[] = [];
  for (const route of routes) {
    const params = matchPattern(route.pattern, segments);
    if (!params) continue;
    if (route.method === wanted) return { route, params };
    if (!allowed.includes(route.method)) allowed.push(route.method);
  }
  return allowed.length > 0 ? { allowed } : undefined;
}

function matchPattern(pattern: string, segments: readonly string[]): Record<string, string> | undefined {
  const parts = pattern.split('/').filter((s) => s !== '');
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of parts.entries()) {
    const segment = segments[i] as string;
    if (part.startsWith(':')) {
      let value: string;
      try {
        value = decodeURIComponent(segment);
      } catch {
        return undefined;
      }
      if (value === '') return undefined;
      params[part.slice(1)] = value;
    } else if (part !== segment) {
      return undefined;
    }
  }
  return params;
}
