/**
 * The web modules nodepool-server serves beside its built-in status (issue 25), made from one
 * {@link WebContext}: the write API (docs/api.md), the build log route (docs/build-logs.md) and
 * the console pages (docs/console.md).
 * Their routes are asked in this order; `stop` stops each module's timers.
 */
import type { Route, UnroutedSink, WebModule } from './routes.js';
import { apiModule } from './api/api-module.js';
import { buildLogModule } from './build-logs/build-log-module.js';
import { consoleModule } from './console/console-module.js';
import type { WebContext } from './web-context.js';

/** The modules, their routes in the order the server asks them, and where the write API counts unrouted writes. */
export function webModules(ctx: WebContext): { ctx: WebContext; routes: Route[]; unrouted: UnroutedSink | undefined; stop: () => Promise<void> } {
  const api = apiModule(ctx);
  const modules: WebModule[] = [api, buildLogModule(ctx), consoleModule(ctx)];
  return {
    ctx,
    routes: modules.flatMap((m) => m.routes),
    unrouted: api.unrouted,
    stop: async () => {
      await Promise.all(modules.map((m) => m.stop?.()));
    },
  };
}
