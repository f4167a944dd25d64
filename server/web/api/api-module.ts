/**
 * The web write API (issue 25 §1): JSON endpoints under `/api/` for every operator action, in
 * the style of Zuul's REST API, authorised by bearer tokens with roles, each write kept in the
 * audit trail (write-route.ts), and the trail itself at `GET /api/audit`. docs/api.md lists
 * the endpoints, bodies, roles and answers.
 */
import type { WebModule } from '../routes.js';
import type { WebContext } from '../web-context.js';
import { auditRoute } from './audit-route.js';
import { RefusalLedger } from './refusal-ledger.js';
import { WRITE_ENDPOINTS } from './write-endpoints.js';
import { writeRoute } from './write-route.js';

/** Options of {@link apiModule} (tests shorten the flush). */
export interface ApiModuleOptions {
  /** How often the refusal counts of ended minutes are written (default 10 s). */
  refusalFlushMs?: number;
}

/**
 * The write API's routes, and the ledger of refused writes (started here, written once more at
 * `stop`), which also counts the writes no route takes. Without `webapp.auth` every write
 * answers 403 (the authenticator says so), counted, never an entry each.
 */
export function apiModule(ctx: WebContext, opts: ApiModuleOptions = {}): WebModule & { ledger: RefusalLedger } {
  const log = ctx.log.child({ component: 'web-api' });
  const ledger = new RefusalLedger({ store: ctx.store, log, clock: ctx.clock, ...(opts.refusalFlushMs ? { flushIntervalMs: opts.refusalFlushMs } : {}) });
  ledger.start();
  return {
    ledger,
    routes: [...WRITE_ENDPOINTS.map((ep) => writeRoute(ctx, log, ep, ledger)), auditRoute(ctx, ledger)],
    unrouted: (w) => (ledger.note(w) ? ledger.retryAfterSeconds(w.remote) : undefined),
    stop: () => ledger.stop(),
  };
}
