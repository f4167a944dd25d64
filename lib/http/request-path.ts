/**
 * The path and query of an HTTP request target, as every status and metrics port reads it:
 * `//image-list` is `/image-list` (not a URL naming the host `image-list`), repeated slashes
 * are one, and a trailing slash is dropped (`/metrics/` is `/metrics`). Pure.
 */

/** A request target's normalised path and its query parameters. */
export interface RequestPath {
  pathname: string;
  searchParams: URLSearchParams;
}

/** Reads `req.url` (origin-form, or absolute-form from a proxy). */
export function requestPath(target: string | undefined): RequestPath {
  const raw = target ?? '/';
  // Only an absolute-form target names a host; an origin-form one is a path even when it starts with `//`.
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? new URL(raw) : new URL(`http://localhost${raw.startsWith('/') ? '' : '/'}${raw}`);
  const merged = url.pathname.replace(/\/{2,}/g, '/');
  const pathname = merged.length > 1 ? merged.replace(/\/$/, '') : merged;
  return { pathname, searchParams: url.searchParams };
}
