/**
 * The web write API (issue 25 §1): JSON endpoints under `/api/` for every operator action, in
 * the style of Zuul's REST API, authorised by bearer tokens with roles, each write kept in the
 * audit trail (write-route.ts), and the trail itself at `GET /api/audit`. docs/api.md lists
 * the endpoints, bodies, roles and answers.
 */
import type { WebModule } from '../routes.js';
import type { WebContext } from '../web-context.js';
import { auditRoute } from './audit-route.js';
import { WRITE_ENDPOINTS } from './write-endpoints.js';
import { writeRoute } from './write-route.js';

/** The write API's routes. Without `webapp.auth` every write answers 403 (the authenticator says so). */
export function apiModule(ctx: WebContext): WebModule {
  const log = ctx.log.child({ component: 'web-api' });
  return { routes: [...WRITE_ENDPOINTS.map((ep) => writeRoute(ctx, log, ep)), auditRoute(ctx)] };
}
