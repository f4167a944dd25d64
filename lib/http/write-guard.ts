/**
 * What a write request must carry before anything else is done with it (issue 31 §3): it comes
 * from a page of this server's own origin or from no page at all, and it declares a JSON body.
 * A page on another origin can send a "simple" request (a form post, or `fetch` with
 * `mode: 'no-cors'`) without a CORS preflight, but never with `Content-Type: application/json`
 * and never without the browser's `Origin` and `Sec-Fetch-Site` headers saying where it came
 * from; so such a request is refused here, before it is authenticated, acted on or audited one
 * by one. `Sec-Fetch-Site` is the browser's own word (no page can set it) and is trusted when
 * present: `same-origin` or `none` passes without comparing `Origin` with `Host` (a reverse
 * proxy may rewrite `Host` and add no `X-Forwarded-Host`), anything else is refused. Without it
 * (older browsers), `Origin` must name the host the request was sent to. Clients that are not
 * browsers (curl, scripts) send neither header and pass. Pure.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Why a write request is refused before it is read: 403 for another origin, 415 for a body that is not declared JSON. */
export interface WriteGuardRefusal {
  status: 403 | 415;
  /** One word, for the refusal counts: `cross-origin` or `content-type`. */
  reason: 'cross-origin' | 'content-type';
  message: string;
}

/** Whether a Content-Type names JSON (`application/json`, with or without parameters). */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType.trim());
}

/** The refusal of a request from a page on another origin, or undefined. */
export function crossOriginProblem(headers: IncomingHttpHeaders): WriteGuardRefusal | undefined {
  const site = one(headers['sec-fetch-site']);
  // `none`: the user's own navigation (typed, bookmarked); `same-origin`: this server's page.
  // The browser says so itself, so Origin needs no comparison with a Host a proxy may have rewritten.
  if (site === 'same-origin' || site === 'none') return undefined;
  if (site !== undefined) return refusal(`a write from another site's page is refused (Sec-Fetch-Site: ${clip(site)})`);
  // No Sec-Fetch-Site (a browser without it, or no browser): Origin, when sent, must name this host.
  const origin = one(headers.origin);
  if (origin === undefined) return undefined;
  let host: string;
  try {
    host = new URL(origin).host.toLowerCase();
  } catch {
    return refusal(`a write from an opaque or unreadable origin is refused (Origin: ${clip(origin)})`);
  }
  // Behind a reverse proxy the browser's origin names the proxy, which forwards its own host.
  const served = [one(headers.host), one(headers['x-forwarded-host'])].filter((h): h is string => h !== undefined).map((h) => h.trim().toLowerCase());
  if (host === '' || !served.includes(host)) return refusal(`a write from a page on another origin is refused (Origin: ${clip(origin)})`);
  return undefined;
}

/** The refusal of a write that does not declare a JSON body, or undefined (every write declares one, even with no body). */
export function contentTypeProblem(contentType: string | undefined): WriteGuardRefusal | undefined {
  if (isJsonContentType(contentType)) return undefined;
  return {
    status: 415, reason: 'content-type',
    message: `a write must be sent with Content-Type: application/json (even with no body), got ${contentType ? JSON.stringify(clip(contentType)) : 'no Content-Type'}`,
  };
}

function refusal(message: string): WriteGuardRefusal {
  return { status: 403, reason: 'cross-origin', message };
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** A header value as a message shows it: printable ASCII only, cut short. */
function clip(v: string): string {
  const printable = v.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 80 ? `${printable.slice(0, 77)}...` : printable;
}
