/**
 * The operator console (issue 25 §3) as a web module: server-rendered pages (overview at `/`,
 * `/images`, `/builds/<id>`, `/nodes`, `/requests`, `/labels`) that read without JavaScript,
 * each answering its page model as JSON with `?format=json` for its script to redraw every two
 * seconds; the script itself; the former dashboard at `/dashboard` (its data stays at
 * `/dashboard.json`); and the sampler of node and request counts behind the overview's charts,
 * stopped with the module.
 */
import { dashboardPage } from '../dashboard-page.js';
import type { Answer, Route, WebModule, WebRequest } from '../routes.js';
import type { WebContext } from '../web-context.js';
import { buildPage, readBuild, unknownBuildPage } from './build-page.js';
import { CLIENT_SCRIPT, CLIENT_SCRIPT_PATH } from './client-script.js';
import { CountSampler } from './count-sampler.js';
import { pageHtml } from './html.js';
import { imagesPage, readImages } from './images-page.js';
import { overviewPage, readOverview } from './overview-page.js';
import type { ConsolePage } from './page-model.js';
import { labelsPage, nodesPage, readLabels, readNodes, readRequests, requestsPage } from './pool-pages.js';

/** Options of {@link consoleModule} (tests shorten the sampling). */
export interface ConsoleOptions {
  /** Between two samples of the counts (default 30 s). */
  sampleIntervalMs?: number;
  /** Samples kept (default four hours' worth). */
  sampleCapacity?: number;
}

const NO_STORE = { 'Cache-Control': 'no-store' };

/** Whether the request asks for the page model as JSON (`?format=json`, or an Accept of JSON and not HTML). */
export function wantsJson(req: Pick<WebRequest, 'url' | 'headers'>): boolean {
  if (req.url.searchParams.get('format') === 'json') return true;
  const accept = req.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

function pageAnswer(req: WebRequest, page: ConsolePage, status = 200): Answer {
  if (wantsJson(req)) return { status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(page), headers: NO_STORE };
  return { status, contentType: 'text/html; charset=utf-8', body: pageHtml(page), headers: NO_STORE };
}

/** The console's routes and its sampler; `stop` ends the sampler. */
export function consoleModule(ctx: WebContext, opts: ConsoleOptions = {}): WebModule {
  const sampler = new CountSampler({
    store: ctx.store, clock: ctx.clock, log: ctx.log.child({ component: 'console' }),
    ...(opts.sampleIntervalMs ? { intervalMs: opts.sampleIntervalMs } : {}),
    ...(opts.sampleCapacity ? { capacity: opts.sampleCapacity } : {}),
  });
  sampler.start();
  const page = (pattern: string, make: (req: WebRequest, params: Record<string, string>) => Promise<{ page: ConsolePage; status?: number }>): Route => ({
    method: 'GET', pattern,
    handle: async (req, params) => {
      const made = await make(req, params);
      return pageAnswer(req, made.page, made.status);
    },
  });
  const routes: Route[] = [
    page('/', async () => ({ page: overviewPage(await readOverview(ctx, sampler.samples(), sampler.windowMs)) })),
    page('/images', async () => ({ page: imagesPage(await readImages(ctx)) })),
    page('/builds/:build', async (_req, { build }) => {
      const data = await readBuild(ctx, build as string);
      return data ? { page: buildPage(data) } : { page: unknownBuildPage(build as string, ctx.clock()), status: 404 };
    }),
    page('/nodes', async (req) => ({ page: nodesPage(await readNodes(ctx, req.url.searchParams)) })),
    page('/requests', async () => ({ page: requestsPage(await readRequests(ctx)) })),
    page('/labels', async () => ({ page: labelsPage(await readLabels(ctx)) })),
    {
      method: 'GET', pattern: CLIENT_SCRIPT_PATH,
      handle: () => Promise.resolve({ status: 200, contentType: 'text/javascript; charset=utf-8', body: CLIENT_SCRIPT, headers: { 'Cache-Control': 'no-cache' } }),
    },
    {
      method: 'GET', pattern: '/dashboard',
      handle: () => Promise.resolve({ status: 200, contentType: 'text/html; charset=utf-8', body: dashboardPage(), headers: { 'Cache-Control': 'no-cache' } }),
    },
  ];
  return { routes, stop: () => { sampler.stop(); return Promise.resolve(); } };
}
