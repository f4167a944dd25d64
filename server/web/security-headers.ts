/**
 * Headers every answer of the web server carries (issue 31 §10): a Content-Security-Policy that
 * lets a page run only this server's scripts (the console's `/console/console.js`, the former
 * dashboard's one inline script by its hash) and talk only to this server, and no page of
 * another site frame it; `X-Frame-Options: DENY` for browsers without `frame-ancestors`; and
 * `X-Content-Type-Options: nosniff`, so no answer (a build log, a JSON list) is read as a
 * script or a page. Styles may be inline (the pages' `<style>` and progress bars' widths).
 */
import { DASHBOARD_SCRIPT_SOURCE } from './dashboard-page.js';

/** The policy: scripts and connections of this origin only, no framing, no plugins, forms post here. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src 'self' ${DASHBOARD_SCRIPT_SOURCE}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** The headers, as `writeHead` takes them. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
};
